"""Probe batch (a): mixed precision and performance idioms from training scripts (autocast,
GradScaler, backends flags, compile, inference_mode, channels_last, guarded cuda calls,
checkpointing, scaled_dot_product_attention)."""
import contextlib

from probe_common import data, linear_weights


def _model(torch):
    return linear_weights(torch, torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2)))


# --- autocast -----------------------------------------------------------------------------------

def probe_autocast_cpu_bf16_linear_dtype(torch):
    m = _model(torch)
    x = data(torch, 3, 4)
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16):
        y = m(x)
    # bfloat16 keeps 8 bits: compare with the float32 forward at bfloat16's resolution.
    return y.dtype, torch.allclose(y.float(), m(x), atol=2e-2, rtol=2e-2)


def probe_autocast_cpu_default_dtype(torch):
    with torch.autocast("cpu"):
        return torch.get_autocast_dtype("cpu"), torch.is_autocast_enabled("cpu")


def probe_autocast_enabled_false(torch):
    with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=False):
        y = data(torch, 2, 3) @ data(torch, 3, 2, seed=1)
    return y.dtype


def probe_amp_autocast_namespace(torch):
    with torch.amp.autocast("cpu", dtype=torch.bfloat16):
        y = torch.mm(data(torch, 2, 3), data(torch, 3, 2, seed=1))
    return y.dtype


def probe_cpu_amp_autocast_legacy(torch):
    with torch.cpu.amp.autocast():
        y = torch.mm(data(torch, 2, 3), data(torch, 3, 2, seed=1))
    return y.dtype


def probe_autocast_as_decorator(torch):
    @torch.autocast(device_type="cpu", dtype=torch.bfloat16)
    def forward(a, b):
        return a @ b
    return forward(data(torch, 2, 3), data(torch, 3, 2, seed=1)).dtype


def probe_autocast_softmax_stays_float(torch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        h = data(torch, 2, 3) @ data(torch, 3, 4, seed=1)
        p = torch.softmax(h, dim=-1)
    return h.dtype, p.dtype


def probe_autocast_nested_disable(torch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        with torch.autocast("cpu", enabled=False):
            y = data(torch, 2, 3) @ data(torch, 3, 2, seed=1)
        z = data(torch, 2, 3) @ data(torch, 3, 2, seed=1)
    return y.dtype, z.dtype


def probe_autocast_loss_backward(torch):
    m = _model(torch)
    x, t = data(torch, 5, 4), torch.tensor([0, 1, 1, 0, 1])
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = torch.nn.functional.cross_entropy(m(x), t)
    loss.backward()
    return loss.dtype, m[0].weight.grad.dtype


def probe_is_autocast_available(torch):
    return torch.amp.is_autocast_available("cpu")


def probe_autocast_device_type_from_tensor(torch):
    x = data(torch, 2, 2)
    with torch.autocast(device_type=x.device.type, dtype=torch.bfloat16):
        return (x @ x).dtype


def probe_autocast_cuda_guarded(torch):
    device_type = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.float16 if device_type == "cuda" else torch.bfloat16
    with torch.autocast(device_type=device_type, dtype=dtype):
        return (data(torch, 2, 2) @ data(torch, 2, 2)).dtype


def probe_autocast_custom_fwd(torch):
    class Square(torch.autograd.Function):
        @staticmethod
        @torch.amp.custom_fwd(device_type="cpu")
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        @torch.amp.custom_bwd(device_type="cpu")
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return 2 * x * g
    x = data(torch, 3, requires_grad=True)
    Square.apply(x).sum().backward()
    return x.grad


def probe_autocast_conv_bf16(torch):
    conv = linear_weights(torch, torch.nn.Conv2d(3, 4, 3))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return conv(data(torch, 1, 3, 5, 5)).dtype


def probe_autocast_addmm_and_bmm(torch):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        a = torch.bmm(data(torch, 2, 3, 4), data(torch, 2, 4, 5, seed=1))
        b = torch.addmm(data(torch, 3), data(torch, 2, 4), data(torch, 4, 3, seed=2))
    return a.dtype, b.dtype


def probe_get_autocast_gpu_dtype(torch):
    return torch.get_autocast_dtype("cuda")


# --- GradScaler ---------------------------------------------------------------------------------

def probe_gradscaler_disabled_on_cpu_loop(torch):
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", enabled=False)
    for _ in range(2):
        opt.zero_grad()
        loss = m(data(torch, 4, 4)).pow(2).mean()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    return m[0].weight


def probe_gradscaler_cpu_enabled_scale(torch):
    scaler = torch.amp.GradScaler("cpu", init_scale=1024.0)
    loss = torch.tensor(2.0)
    return scaler.scale(loss), scaler.get_scale(), scaler.is_enabled()


def probe_gradscaler_unscale_clip(torch):
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    scaler = torch.amp.GradScaler("cpu", init_scale=256.0)
    loss = m(data(torch, 4, 4)).pow(2).mean()
    scaler.scale(loss).backward()
    scaler.unscale_(opt)
    norm = torch.nn.utils.clip_grad_norm_(m.parameters(), max_norm=1.0)
    scaler.step(opt)
    scaler.update()
    return norm, m[0].weight, scaler.get_scale()


def probe_gradscaler_inf_skips_step(torch):
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    before = m[0].weight.detach().clone()
    scaler = torch.amp.GradScaler("cpu", init_scale=8.0)
    loss = m(data(torch, 4, 4)).sum() * float("inf")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return torch.equal(before, m[0].weight.detach()), scaler.get_scale()


def probe_gradscaler_state_dict(torch):
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 10, growth_interval=3)
    state = scaler.state_dict()
    other = torch.amp.GradScaler("cpu")
    other.load_state_dict(state)
    return sorted(state), state["scale"], other.get_scale(), other.get_growth_interval()


def probe_gradscaler_legacy_cuda_disabled(torch):
    scaler = torch.cuda.amp.GradScaler(enabled=torch.cuda.is_available())
    return scaler.is_enabled(), scaler.scale(torch.tensor(3.0))


def probe_gradscaler_amp_default_device(torch):
    scaler = torch.amp.GradScaler(enabled=False)
    return scaler.get_scale(), scaler.is_enabled()


def probe_gradscaler_getters(torch):
    s = torch.amp.GradScaler("cpu", init_scale=4.0, growth_factor=3.0, backoff_factor=0.25, growth_interval=7)
    return s.get_growth_factor(), s.get_backoff_factor(), s.get_growth_interval(), s.get_scale()


def probe_gradscaler_growth_after_interval(torch):
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    s = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    for _ in range(2):
        opt.zero_grad()
        s.scale(m(data(torch, 2, 4)).mean()).backward()
        s.step(opt)
        s.update()
    return s.get_scale()


def probe_gradscaler_update_new_scale(torch):
    s = torch.amp.GradScaler("cpu", init_scale=4.0)
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    s.scale(m(data(torch, 2, 4)).mean()).backward()
    s.step(opt)
    s.update(16.0)
    return s.get_scale()


def probe_gradscaler_scale_list(torch):
    s = torch.amp.GradScaler("cpu", init_scale=2.0)
    out = s.scale([torch.tensor(1.0), torch.tensor(3.0)])
    return list(out)


def probe_gradscaler_step_returns(torch):
    m = _model(torch)
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    s = torch.amp.GradScaler("cpu")
    s.scale(m(data(torch, 2, 4)).mean()).backward()
    return s.step(opt) is None


# --- backends flags and precision ---------------------------------------------------------------

def probe_cudnn_benchmark_flag(torch):
    torch.backends.cudnn.benchmark = True
    value = torch.backends.cudnn.benchmark
    torch.backends.cudnn.benchmark = False
    return value


def probe_cudnn_deterministic(torch):
    torch.backends.cudnn.deterministic = True
    v = torch.backends.cudnn.deterministic
    torch.backends.cudnn.deterministic = False
    return v


def probe_cudnn_allow_tf32(torch):
    old = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = True
    v = torch.backends.cudnn.allow_tf32
    torch.backends.cudnn.allow_tf32 = old
    return v


def probe_cuda_matmul_allow_tf32(torch):
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    v = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = old
    return v, old


def probe_cudnn_enabled_and_available(torch):
    return torch.backends.cudnn.enabled, torch.backends.cudnn.is_available()


def probe_cudnn_version(torch):
    return torch.backends.cudnn.version() is None or isinstance(torch.backends.cudnn.version(), int)


def probe_mps_available(torch):
    return torch.backends.mps.is_available(), torch.backends.mps.is_built()


def probe_reduced_precision_reduction_flags(torch):
    return (torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
            torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction)


def probe_set_float32_matmul_precision(torch):
    torch.set_float32_matmul_precision("high")
    v = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    return v, torch.get_float32_matmul_precision()


def probe_set_float32_matmul_precision_bad(torch):
    try:
        torch.set_float32_matmul_precision("fast")
    except RuntimeError:
        return "RuntimeError"
    return "accepted"


def probe_use_deterministic_algorithms(torch):
    torch.use_deterministic_algorithms(True, warn_only=True)
    v = torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled()
    torch.use_deterministic_algorithms(False)
    return v, torch.are_deterministic_algorithms_enabled()


def probe_set_num_threads(torch):
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    v = torch.get_num_threads()
    torch.set_num_threads(n)
    return v


def probe_interop_threads(torch):
    return torch.get_num_interop_threads() >= 1


def probe_backends_opt_einsum(torch):
    return isinstance(torch.backends.opt_einsum.is_available(), bool)


def probe_backends_mkldnn_flags(torch):
    return isinstance(torch.backends.mkldnn.is_available(), bool)


def probe_backends_flash_sdp_toggle(torch):
    torch.backends.cuda.enable_flash_sdp(False)
    v = torch.backends.cuda.flash_sdp_enabled()
    torch.backends.cuda.enable_flash_sdp(True)
    return v, torch.backends.cuda.flash_sdp_enabled()


def probe_backends_mem_efficient_math(torch):
    torch.backends.cuda.enable_mem_efficient_sdp(False)
    torch.backends.cuda.enable_math_sdp(True)
    v = torch.backends.cuda.mem_efficient_sdp_enabled(), torch.backends.cuda.math_sdp_enabled()
    torch.backends.cuda.enable_mem_efficient_sdp(True)
    return v


def probe_set_default_dtype_float64(torch):
    torch.set_default_dtype(torch.float64)
    v = torch.tensor([1.0]).dtype, torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    return v


def probe_cudnn_flags_context(torch):
    with torch.backends.cudnn.flags(enabled=False):
        v = torch.backends.cudnn.enabled
    return v


# --- compile ------------------------------------------------------------------------------------

def probe_compile_default(torch):
    m = torch.compile(_model(torch))
    return m(data(torch, 2, 4))


def probe_compile_mode(torch):
    m = torch.compile(_model(torch), mode="reduce-overhead")
    return m(data(torch, 2, 4))


def probe_compile_fullgraph_dynamic(torch):
    m = torch.compile(_model(torch), fullgraph=True, dynamic=False, backend="inductor")
    return m(data(torch, 2, 4))


def probe_compile_function_decorator(torch):
    @torch.compile
    def f(x):
        return torch.sin(x) + torch.cos(x)
    return f(data(torch, 3))


def probe_compile_decorator_with_options(torch):
    @torch.compile(mode="max-autotune", options=None)
    def f(x):
        return x * 2
    return f(data(torch, 3))


def probe_compile_backend_eager(torch):
    return torch.compile(lambda x: x + 1, backend="eager")(torch.ones(2))


def probe_module_compile_inplace(torch):
    m = _model(torch)
    m.compile()
    return m(data(torch, 2, 4))


def probe_compiler_disable(torch):
    @torch.compiler.disable
    def f(x):
        return x - 1
    return f(torch.ones(2)), torch.compiler.is_compiling()


def probe_dynamo_reset(torch):
    torch._dynamo.reset()
    return True


def probe_dynamo_config_suppress(torch):
    torch._dynamo.config.suppress_errors = True
    return True


def probe_compiler_reset(torch):
    torch.compiler.reset()
    return torch.compiler.is_dynamo_compiling()


# --- inference mode and no_grad -----------------------------------------------------------------

def probe_inference_mode_context(torch):
    m = _model(torch)
    with torch.inference_mode():
        y = m(data(torch, 2, 4))
    return y.requires_grad, y.is_inference(), torch.is_inference_mode_enabled()


def probe_inference_mode_decorator(torch):
    @torch.inference_mode()
    def predict(x):
        return x * 2
    y = predict(data(torch, 2, requires_grad=True))
    return y.requires_grad, y


def probe_inference_mode_bare_decorator(torch):
    @torch.inference_mode
    def predict(x):
        return x + 1
    return predict(data(torch, 2, requires_grad=True)).requires_grad


def probe_inference_mode_false(torch):
    with torch.inference_mode(mode=False):
        y = data(torch, 2, requires_grad=True) * 2
    return y.requires_grad


def probe_no_grad_decorator(torch):
    @torch.no_grad()
    def f(x):
        return x * 3
    return f(data(torch, 2, requires_grad=True)).requires_grad


def probe_enable_grad_inside_no_grad(torch):
    with torch.no_grad():
        with torch.enable_grad():
            y = data(torch, 2, requires_grad=True) * 2
    return y.requires_grad


def probe_set_grad_enabled(torch):
    torch.set_grad_enabled(False)
    a = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    with torch.set_grad_enabled(False):
        b = (data(torch, 2, requires_grad=True) * 2).requires_grad
    return a, b, torch.is_grad_enabled()


# --- memory formats ----------------------------------------------------------------------------

def probe_channels_last_model_and_input(torch):
    conv = linear_weights(torch, torch.nn.Conv2d(3, 4, 3, padding=1)).to(memory_format=torch.channels_last)
    x = data(torch, 2, 3, 5, 5).to(memory_format=torch.channels_last)
    y = conv(x)
    return x.is_contiguous(memory_format=torch.channels_last), x.stride(), y


def probe_channels_last_contiguous_call(torch):
    x = data(torch, 1, 3, 4, 4).contiguous(memory_format=torch.channels_last)
    return x.stride(), x.is_contiguous()


def probe_channels_last_batchnorm(torch):
    bn = torch.nn.BatchNorm2d(3).to(memory_format=torch.channels_last)
    return bn(data(torch, 2, 3, 4, 4).to(memory_format=torch.channels_last))


def probe_pin_memory_guarded(torch):
    x = data(torch, 3)
    if torch.cuda.is_available():
        x = x.pin_memory()
    return x.is_pinned()


def probe_to_non_blocking(torch):
    return data(torch, 3).to("cpu", non_blocking=True)


# --- guarded cuda calls --------------------------------------------------------------------------

def probe_cuda_guard_device(torch):
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return str(device), torch.cuda.device_count()


def probe_cuda_manual_seed_all(torch):
    torch.cuda.manual_seed_all(0)
    torch.cuda.manual_seed(0)
    return True


def probe_cuda_empty_cache(torch):
    torch.cuda.empty_cache()
    return True


def probe_cuda_synchronize_guarded(torch):
    if torch.cuda.is_available():
        torch.cuda.synchronize()
    return torch.cuda.is_available()


def probe_cuda_memory_stats_guarded(torch):
    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() >= 0
    return "no cuda"


def probe_cuda_is_bf16_supported(torch):
    return torch.cuda.is_available() and torch.cuda.is_bf16_supported()


def probe_cuda_amp_autocast_disabled_on_cpu(torch):
    with warnings_ignored():
        with torch.cuda.amp.autocast(enabled=False):
            return (data(torch, 2, 2) @ data(torch, 2, 2)).dtype


def probe_accelerator_idiom(torch):
    device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")
    return isinstance(device, torch.device)  # which accelerator depends on the machine and the library


def probe_cuda_get_device_name_guarded(torch):
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def probe_cuda_reset_peak_guarded(torch):
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    return True


def probe_cuda_is_initialized(torch):
    return torch.cuda.is_initialized()


def probe_default_device_context(torch):
    with torch.device("cpu"):
        x = torch.ones(2)
    return str(x.device)


def probe_set_default_device(torch):
    torch.set_default_device("cpu")
    x = torch.zeros(1)
    return str(x.device), str(torch.get_default_device())


# --- checkpointing ------------------------------------------------------------------------------

def probe_checkpoint_non_reentrant(torch):
    from torch.utils.checkpoint import checkpoint  # noqa: F401 (import form checked below)
    return None


def probe_checkpoint_function(torch):
    m = _model(torch)
    x = data(torch, 3, 4, requires_grad=True)
    y = torch.utils.checkpoint.checkpoint(m, x, use_reentrant=False)
    y.sum().backward()
    return y, x.grad, m[0].weight.grad


def probe_checkpoint_reentrant(torch):
    m = _model(torch)
    x = data(torch, 3, 4, requires_grad=True)
    y = torch.utils.checkpoint.checkpoint(m, x, use_reentrant=True)
    y.sum().backward()
    return x.grad


def probe_checkpoint_sequential(torch):
    m = _model(torch)
    x = data(torch, 3, 4, requires_grad=True)
    y = torch.utils.checkpoint.checkpoint_sequential(m, 2, x, use_reentrant=False)
    y.sum().backward()
    return y, x.grad


def probe_checkpoint_kwargs(torch):
    def block(a, scale=1.0):
        return (a * scale).tanh()
    x = data(torch, 3, requires_grad=True)
    y = torch.utils.checkpoint.checkpoint(block, x, scale=2.0, use_reentrant=False)
    y.sum().backward()
    return x.grad


def probe_checkpoint_in_module_forward(torch):
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = torch.nn.Linear(4, 1)

        def forward(self, x):
            h = torch.utils.checkpoint.checkpoint(self.a, x, use_reentrant=False)
            return self.b(torch.relu(h))
    net = linear_weights(torch, Net())
    out = net(data(torch, 2, 4))
    out.sum().backward()
    return net.a.weight.grad


def probe_checkpoint_preserve_rng(torch):
    x = data(torch, 3, requires_grad=True)
    y = torch.utils.checkpoint.checkpoint(lambda a: a.exp(), x, use_reentrant=False, preserve_rng_state=False)
    y.sum().backward()
    return x.grad


# --- scaled dot product attention ---------------------------------------------------------------

def _qkv(torch, heads=2, lq=4, lk=4, d=8, kv_heads=None):
    kv = kv_heads or heads
    return data(torch, 1, heads, lq, d), data(torch, 1, kv, lk, d, seed=1), data(torch, 1, kv, lk, d, seed=2)


def probe_sdpa_plain(torch):
    q, k, v = _qkv(torch)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def probe_sdpa_causal(torch):
    q, k, v = _qkv(torch)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def probe_sdpa_causal_rectangular(torch):
    q, k, v = _qkv(torch, lq=3, lk=5)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def probe_sdpa_bool_mask(torch):
    q, k, v = _qkv(torch)
    mask = torch.ones(4, 4, dtype=torch.bool).tril()
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def probe_sdpa_float_mask(torch):
    q, k, v = _qkv(torch)
    mask = torch.zeros(4, 4).masked_fill(torch.ones(4, 4, dtype=torch.bool).triu(1), float("-inf"))
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def probe_sdpa_padding_mask_broadcast(torch):
    q, k, v = _qkv(torch)
    keep = torch.tensor([True, True, True, False]).view(1, 1, 1, 4)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)


def probe_sdpa_scale(torch):
    q, k, v = _qkv(torch)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, scale=0.5)


def probe_sdpa_dropout_shape(torch):
    q, k, v = _qkv(torch)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1).shape


def probe_sdpa_dropout_eval_idiom(torch):
    q, k, v = _qkv(torch)
    training = False
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, dropout_p=0.1 if training else 0.0, is_causal=True)


def probe_sdpa_gqa(torch):
    q, k, v = _qkv(torch, heads=4, kv_heads=2)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, enable_gqa=True)


def probe_sdpa_3d_inputs(torch):
    q, k, v = data(torch, 2, 4, 8), data(torch, 2, 5, 8, seed=1), data(torch, 2, 5, 3, seed=2)
    return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def probe_sdpa_backward(torch):
    q = data(torch, 1, 2, 3, 4, requires_grad=True)
    k = data(torch, 1, 2, 3, 4, seed=1, requires_grad=True)
    v = data(torch, 1, 2, 3, 4, seed=2, requires_grad=True)
    torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True).sum().backward()
    return q.grad, k.grad, v.grad


def probe_sdpa_mask_and_causal_error(torch):
    q, k, v = _qkv(torch)
    try:
        torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=torch.ones(4, 4, dtype=torch.bool), is_causal=True)
    except RuntimeError:
        return "RuntimeError"
    return "accepted"


def probe_sdpa_bf16_autocast(torch):
    q, k, v = _qkv(torch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    return out.dtype


def probe_sdpa_kernel_context_math(torch):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv(torch)
    with sdpa_kernel(SDPBackend.MATH):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v)


def probe_sdpa_kernel_list(torch):
    from torch.nn.attention import SDPBackend, sdpa_kernel
    q, k, v = _qkv(torch)
    with sdpa_kernel([SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH]):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)


def probe_sdpa_float64(torch):
    q = data(torch, 1, 1, 3, 4, dtype="float64")
    return torch.nn.functional.scaled_dot_product_attention(q, q, q)


def probe_sdpa_keywords(torch):
    q, k, v = _qkv(torch)
    return torch.nn.functional.scaled_dot_product_attention(query=q, key=k, value=v, attn_mask=None, dropout_p=0.0, is_causal=False)


def probe_multihead_attention_need_weights_false(torch):
    mha = linear_weights(torch, torch.nn.MultiheadAttention(8, 2, batch_first=True))
    x = data(torch, 2, 3, 8)
    out, w = mha(x, x, x, need_weights=False)
    return out, w


def probe_mha_causal_mask_generation(torch):
    mask = torch.nn.Transformer.generate_square_subsequent_mask(4)
    return mask


# --- misc performance idioms --------------------------------------------------------------------

def probe_zero_grad_set_to_none(torch):
    m = _model(torch)
    m(data(torch, 2, 4)).sum().backward()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, fused=None)
    opt.zero_grad(set_to_none=True)
    return m[0].weight.grad is None


def probe_adamw_foreach(torch):
    m = _model(torch)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2, foreach=True)
    m(data(torch, 2, 4)).sum().backward()
    opt.step()
    return m[0].weight


def probe_tensor_float16_roundtrip(torch):
    return data(torch, 4).half().float()


def probe_bfloat16_model_cast(torch):
    m = _model(torch).to(torch.bfloat16)
    return m(data(torch, 2, 4).to(torch.bfloat16)).dtype


def probe_model_half(torch):
    m = _model(torch).half()
    return m[0].weight.dtype


def probe_profiler_record_function(torch):
    with torch.profiler.record_function("forward"):
        y = data(torch, 2) * 2
    return y


def probe_autograd_profiler_profile(torch):
    with torch.autograd.profiler.profile(enabled=False):
        y = data(torch, 2) + 1
    return y


def probe_detect_anomaly_context(torch):
    with torch.autograd.detect_anomaly(check_nan=True):
        x = data(torch, 2, requires_grad=True)
        (x * 2).sum().backward()
    return x.grad


def probe_set_detect_anomaly(torch):
    torch.autograd.set_detect_anomaly(False)
    return torch.is_anomaly_enabled()


def probe_manual_seed_returns_generator(torch):
    g = torch.manual_seed(0)
    return type(g).__name__


def probe_grad_accumulation_loss_divided(torch):
    m = _model(torch)
    accum = 2
    for i in range(accum):
        loss = m(data(torch, 2, 4, seed=i)).pow(2).mean() / accum
        loss.backward()
    return m[2].weight.grad


@contextlib.contextmanager
def warnings_ignored():
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield
