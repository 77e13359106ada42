"""Probe batch (c): torchvision-style image transforms written by hand in scripts: uint8 HWC to
float CHW, normalization, resizing, padding, flips, rotations, crops, sampling grids, patches,
colour conversions, grids of images, one-hot labels and bucketing."""
import math

import numpy as np

from probe_common import data, image_uint8

MEAN = [0.485, 0.456, 0.406]
STD = [0.229, 0.224, 0.225]


def _chw(torch, seed=0, h=8, w=6):
    return image_uint8(torch, h, w, seed).permute(2, 0, 1).float() / 255.0


def _batch(torch, n=2, c=3, h=6, w=5):
    return data(torch, n, c, h, w)


# --- conversion and normalization ---------------------------------------------------------------

def probe_to_tensor_manual(torch):
    img = image_uint8(torch)
    return img.permute(2, 0, 1).contiguous().to(dtype=torch.float32).div(255)


def probe_to_tensor_float_div(torch):
    return image_uint8(torch).float().div_(255.0).permute(2, 0, 1)


def probe_from_numpy_image(torch):
    arr = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    return torch.from_numpy(arr.transpose(2, 0, 1).copy()).float() / 255


def probe_as_tensor_image(torch):
    arr = np.random.default_rng(0).integers(0, 256, (4, 5, 3), dtype=np.uint8)
    return torch.as_tensor(arr).permute(2, 0, 1)


def probe_normalize_broadcast_view(torch):
    x = _chw(torch)
    mean = torch.tensor(MEAN).view(3, 1, 1)
    std = torch.tensor(STD).view(3, 1, 1)
    return (x - mean) / std


def probe_normalize_batch_none_index(torch):
    x = _batch(torch)
    mean = torch.tensor(MEAN)[None, :, None, None]
    std = torch.tensor(STD)[None, :, None, None]
    return x.sub(mean).div(std)


def probe_normalize_inplace(torch):
    x = _chw(torch)
    mean = torch.as_tensor(MEAN, dtype=x.dtype, device=x.device)
    std = torch.as_tensor(STD, dtype=x.dtype, device=x.device)
    x.sub_(mean[:, None, None]).div_(std[:, None, None])
    return x


def probe_denormalize_clamp(torch):
    x = _batch(torch)
    std = torch.tensor(STD).reshape(1, 3, 1, 1)
    mean = torch.tensor(MEAN).reshape(1, 3, 1, 1)
    return (x * std + mean).clamp(0, 1)


def probe_to_uint8_for_saving(torch):
    x = torch.sigmoid(_batch(torch))
    return (x * 255).round().clamp(0, 255).to(torch.uint8)


def probe_mul_255_byte(torch):
    x = torch.sigmoid(_batch(torch))
    return x.mul(255).add_(0.5).clamp_(0, 255).permute(0, 2, 3, 1).to("cpu", torch.uint8)


def probe_uint8_arithmetic_overflow(torch):
    img = image_uint8(torch)
    return img + 10


def probe_uint8_div_float(torch):
    return image_uint8(torch) / 255


def probe_uint8_to_float16(torch):
    return image_uint8(torch).half() / 255


def probe_per_image_standardize(torch):
    x = _batch(torch)
    mean = x.mean(dim=(1, 2, 3), keepdim=True)
    std = x.std(dim=(1, 2, 3), keepdim=True)
    return (x - mean) / (std + 1e-6)


def probe_channel_mean_std_dataset(torch):
    x = _batch(torch, n=4)
    return x.mean(dim=[0, 2, 3]), x.std(dim=[0, 2, 3])


def probe_minmax_scale(torch):
    x = _batch(torch)
    lo = x.amin(dim=(-2, -1), keepdim=True)
    hi = x.amax(dim=(-2, -1), keepdim=True)
    return (x - lo) / (hi - lo)


# --- resize ------------------------------------------------------------------------------------

def probe_interpolate_bilinear(torch):
    return torch.nn.functional.interpolate(_batch(torch), size=(9, 7), mode="bilinear", align_corners=False)


def probe_interpolate_bilinear_align(torch):
    return torch.nn.functional.interpolate(_batch(torch), size=(9, 7), mode="bilinear", align_corners=True)


def probe_interpolate_nearest_scale(torch):
    return torch.nn.functional.interpolate(_batch(torch), scale_factor=2, mode="nearest")


def probe_interpolate_nearest_exact(torch):
    return torch.nn.functional.interpolate(_batch(torch), size=(4, 3), mode="nearest-exact")


def probe_interpolate_bicubic(torch):
    return torch.nn.functional.interpolate(_batch(torch), size=(8, 8), mode="bicubic", align_corners=False)


def probe_interpolate_antialias_bilinear(torch):
    return torch.nn.functional.interpolate(_batch(torch, h=12, w=10), size=(5, 4), mode="bilinear", antialias=True)


def probe_interpolate_antialias_bicubic(torch):
    return torch.nn.functional.interpolate(_batch(torch, h=12, w=10), size=(5, 4), mode="bicubic", antialias=True)


def probe_interpolate_area(torch):
    return torch.nn.functional.interpolate(_batch(torch, h=8, w=6), size=(4, 3), mode="area")


def probe_interpolate_area_uneven(torch):
    return torch.nn.functional.interpolate(_batch(torch, h=7, w=5), size=(3, 2), mode="area")


def probe_interpolate_single_image_unsqueeze(torch):
    img = _chw(torch)
    return torch.nn.functional.interpolate(img.unsqueeze(0), size=(4, 4), mode="bilinear", align_corners=False).squeeze(0)


def probe_interpolate_scale_float(torch):
    return torch.nn.functional.interpolate(_batch(torch), scale_factor=0.5, mode="bilinear", align_corners=False,
                                           recompute_scale_factor=True)


def probe_interpolate_scale_tuple(torch):
    return torch.nn.functional.interpolate(_batch(torch), scale_factor=(2.0, 1.5), mode="nearest")


def probe_interpolate_1d_linear(torch):
    return torch.nn.functional.interpolate(data(torch, 2, 3, 5), size=8, mode="linear", align_corners=False)


def probe_interpolate_3d_trilinear(torch):
    return torch.nn.functional.interpolate(data(torch, 1, 2, 3, 4, 4), scale_factor=2, mode="trilinear", align_corners=False)


def probe_interpolate_uint8_nearest(torch):
    img = image_uint8(torch).permute(2, 0, 1).unsqueeze(0)
    return torch.nn.functional.interpolate(img, size=(4, 3), mode="nearest")


def probe_interpolate_uint8_bilinear(torch):
    img = image_uint8(torch).permute(2, 0, 1).unsqueeze(0)
    return torch.nn.functional.interpolate(img, size=(4, 3), mode="bilinear", align_corners=False)


def probe_upsample_module(torch):
    return torch.nn.Upsample(scale_factor=2, mode="bilinear", align_corners=True)(_batch(torch))


def probe_upsampling_nearest2d_module(torch):
    return torch.nn.UpsamplingNearest2d(scale_factor=2)(_batch(torch))


def probe_resize_shorter_side(torch):
    x = _batch(torch, h=6, w=9)
    h, w = x.shape[-2:]
    scale = 4 / min(h, w)
    return torch.nn.functional.interpolate(x, size=(round(h * scale), round(w * scale)), mode="bilinear", align_corners=False)


def probe_mask_resize_nearest_long(torch):
    mask = torch.tensor(np.random.default_rng(0).integers(0, 4, (1, 1, 6, 6)))
    return torch.nn.functional.interpolate(mask.float(), size=(3, 3), mode="nearest").long()


def probe_adaptive_avg_pool_resize(torch):
    return torch.nn.functional.adaptive_avg_pool2d(_batch(torch, h=7, w=5), (3, 2))


# --- pad ---------------------------------------------------------------------------------------

def probe_pad_constant(torch):
    return torch.nn.functional.pad(_batch(torch), (1, 2, 3, 0), mode="constant", value=0.5)


def probe_pad_reflect(torch):
    return torch.nn.functional.pad(_batch(torch), (2, 2, 2, 2), mode="reflect")


def probe_pad_replicate(torch):
    return torch.nn.functional.pad(_batch(torch), (1, 0, 0, 2), mode="replicate")


def probe_pad_circular(torch):
    return torch.nn.functional.pad(_batch(torch), (1, 1, 1, 1), mode="circular")


def probe_pad_reflect_3d_image(torch):
    return torch.nn.functional.pad(_chw(torch), (1, 1, 2, 2), mode="reflect")


def probe_pad_negative_crop(torch):
    return torch.nn.functional.pad(_batch(torch), (-1, -1, -1, 0))


def probe_pad_to_multiple(torch):
    x = _batch(torch, h=6, w=5)
    h, w = x.shape[-2:]
    ph, pw = (8 - h % 8) % 8, (8 - w % 8) % 8
    return torch.nn.functional.pad(x, (0, pw, 0, ph))


def probe_pad_modules(torch):
    x = _batch(torch)
    return torch.nn.ReflectionPad2d(1)(x), torch.nn.ReplicationPad2d((1, 0, 1, 0))(x), torch.nn.ZeroPad2d(2)(x), \
        torch.nn.ConstantPad2d(1, 3.0)(x)


def probe_pad_uint8_image(torch):
    img = image_uint8(torch).permute(2, 0, 1)
    return torch.nn.functional.pad(img, (2, 2, 2, 2), value=114)


def probe_pad_1d_reflect(torch):
    return torch.nn.functional.pad(data(torch, 2, 3, 6), (2, 3), mode="reflect")


def probe_circular_pad_module(torch):
    return torch.nn.CircularPad2d(1)(_batch(torch))


# --- flips, rotations, rolls, crops -------------------------------------------------------------

def probe_hflip(torch):
    return torch.flip(_batch(torch), dims=[-1])


def probe_vflip_method(torch):
    return _batch(torch).flip(-2)


def probe_flip_both(torch):
    return torch.flip(_chw(torch), (1, 2))


def probe_fliplr_flipud(torch):
    x = data(torch, 4, 5)
    return torch.fliplr(x), torch.flipud(x)


def probe_random_flip_mask(torch):
    x = _batch(torch, n=4)
    flip = torch.tensor([True, False, True, False])
    return torch.where(flip[:, None, None, None], x.flip(-1), x)


def probe_rot90(torch):
    return torch.rot90(_batch(torch), k=1, dims=(2, 3))


def probe_rot90_k3_method(torch):
    return _batch(torch).rot90(3, [-2, -1])


def probe_rot90_negative(torch):
    return torch.rot90(_chw(torch), -1, (1, 2))


def probe_transpose_hw(torch):
    return _batch(torch).transpose(-1, -2)


def probe_roll_shift(torch):
    return torch.roll(_batch(torch), shifts=(1, -2), dims=(2, 3))


def probe_roll_flat(torch):
    return torch.roll(data(torch, 3, 4), 5)


def probe_center_crop_slicing(torch):
    x = _batch(torch, h=8, w=8)
    th, tw = 4, 6
    i, j = (x.shape[-2] - th) // 2, (x.shape[-1] - tw) // 2
    return x[..., i:i + th, j:j + tw]


def probe_random_crop_fixed_offsets(torch):
    x = _chw(torch, h=8, w=6)
    top, left = 2, 1
    return x[:, top:top + 4, left:left + 4].contiguous()


def probe_narrow_crop(torch):
    return _batch(torch).narrow(2, 1, 3).narrow(3, 0, 2)


def probe_five_crop_stack(torch):
    x = _chw(torch, h=8, w=8)
    s = 4
    crops = [x[:, :s, :s], x[:, :s, -s:], x[:, -s:, :s], x[:, -s:, -s:], x[:, 2:6, 2:6]]
    return torch.stack(crops)


def probe_crop_with_ellipsis_step(torch):
    return _batch(torch)[..., ::2, ::2]


def probe_negative_step_flip_error(torch):
    x = _batch(torch)
    try:
        return x[..., ::-1]
    except ValueError:
        return "ValueError"


def probe_unfold_patches_tensor(torch):
    x = _batch(torch, h=6, w=6)
    patches = x.unfold(2, 3, 3).unfold(3, 3, 3)
    return patches.shape, patches.contiguous().view(2, 3, -1, 3, 3)


def probe_patchify_reshape_permute(torch):
    x = _batch(torch, h=6, w=6)
    p = 3
    b, c, h, w = x.shape
    x = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 1, 3, 5).reshape(b, (h // p) * (w // p), c * p * p)
    return x


def probe_unpatchify(torch):
    tokens = data(torch, 2, 4, 12)
    b, n, d = tokens.shape
    p, c, g = 2, 3, 2
    return tokens.reshape(b, g, g, c, p, p).permute(0, 3, 1, 4, 2, 5).reshape(b, c, g * p, g * p)


def probe_F_unfold(torch):
    return torch.nn.functional.unfold(_batch(torch), kernel_size=3, padding=1, stride=2)


def probe_F_fold_roundtrip(torch):
    x = _batch(torch, h=6, w=6)
    cols = torch.nn.functional.unfold(x, kernel_size=2, stride=2)
    return torch.nn.functional.fold(cols, output_size=(6, 6), kernel_size=2, stride=2)


def probe_fold_overlap_count(torch):
    ones = torch.ones(1, 1, 5, 5)
    cols = torch.nn.functional.unfold(ones, kernel_size=3, padding=1)
    return torch.nn.functional.fold(cols, (5, 5), kernel_size=3, padding=1)


def probe_unfold_module(torch):
    return torch.nn.Unfold(kernel_size=(2, 3), dilation=1, padding=0, stride=1)(_batch(torch))


# --- sampling grids ----------------------------------------------------------------------------

def _theta(torch):
    angle = 0.3
    return torch.tensor([[[math.cos(angle), -math.sin(angle), 0.1], [math.sin(angle), math.cos(angle), -0.2]]] * 2)


def probe_affine_grid_sample(torch):
    x = _batch(torch)
    grid = torch.nn.functional.affine_grid(_theta(torch), x.size(), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)


def probe_grid_sample_border_nearest(torch):
    x = _batch(torch)
    grid = torch.nn.functional.affine_grid(_theta(torch), list(x.shape), align_corners=True)
    return torch.nn.functional.grid_sample(x, grid, mode="nearest", padding_mode="border", align_corners=True)


def probe_grid_sample_reflection(torch):
    x = _batch(torch)
    grid = torch.nn.functional.affine_grid(_theta(torch) * 1.5, x.size(), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, padding_mode="reflection", align_corners=False)


def probe_grid_sample_bicubic(torch):
    x = _batch(torch)
    grid = torch.nn.functional.affine_grid(_theta(torch), x.size(), align_corners=False)
    return torch.nn.functional.grid_sample(x, grid, mode="bicubic", align_corners=False)


def probe_meshgrid_identity_grid(torch):
    x = _batch(torch)
    h, w = x.shape[-2:]
    ys, xs = torch.meshgrid(torch.linspace(-1, 1, h), torch.linspace(-1, 1, w), indexing="ij")
    grid = torch.stack((xs, ys), dim=-1).unsqueeze(0).expand(x.shape[0], -1, -1, -1)
    return torch.nn.functional.grid_sample(x, grid, align_corners=True)


def probe_flow_warp(torch):
    x = _batch(torch)
    n, _, h, w = x.shape
    flow = data(torch, n, 2, h, w, seed=3) * 0.5
    gy, gx = torch.meshgrid(torch.arange(h, dtype=torch.float32), torch.arange(w, dtype=torch.float32), indexing="ij")
    vx = 2.0 * (gx + flow[:, 0]) / max(w - 1, 1) - 1.0
    vy = 2.0 * (gy + flow[:, 1]) / max(h - 1, 1) - 1.0
    return torch.nn.functional.grid_sample(x, torch.stack((vx, vy), dim=3), align_corners=True)


def probe_grid_sample_grad(torch):
    x = data(torch, 1, 2, 4, 4, requires_grad=True)
    theta = torch.tensor([[[0.9, 0.1, 0.0], [-0.1, 0.9, 0.05]]], requires_grad=True)
    grid = torch.nn.functional.affine_grid(theta, (1, 2, 4, 4), align_corners=False)
    torch.nn.functional.grid_sample(x, grid, align_corners=False).sum().backward()
    return x.grad, theta.grad


# --- colour -----------------------------------------------------------------------------------

def probe_rgb_to_gray_weights(torch):
    x = _batch(torch)
    r, g, b = x.unbind(dim=1)
    return (0.2989 * r + 0.587 * g + 0.114 * b).unsqueeze(1)


def probe_rgb_to_gray_einsum(torch):
    w = torch.tensor([0.299, 0.587, 0.114])
    return torch.einsum("nchw,c->nhw", _batch(torch), w)


def probe_rgb_to_yuv_matmul(torch):
    m = torch.tensor([[0.299, 0.587, 0.114], [-0.14713, -0.28886, 0.436], [0.615, -0.51499, -0.10001]])
    x = _batch(torch)
    return torch.einsum("ij,njhw->nihw", m, x)


def probe_color_matrix_via_permute_matmul(torch):
    m = torch.tensor([[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]])
    x = _chw(torch)
    return (x.permute(1, 2, 0) @ m.T).permute(2, 0, 1).clamp(0, 1)


def probe_tensordot_color(torch):
    m = data(torch, 3, 3, seed=4)
    return torch.tensordot(m, _chw(torch), dims=([1], [0]))


def probe_bgr_swap_index(torch):
    x = _chw(torch)
    return x[[2, 1, 0]], x.flip(0)


def probe_adjust_brightness_contrast(torch):
    x = _chw(torch)
    bright = (x * 1.2).clamp(0, 1)
    mean = x.mean(dim=(-3, -2, -1), keepdim=True)
    return bright, ((x - mean) * 0.8 + mean).clamp(0, 1)


def probe_adjust_saturation_lerp(torch):
    x = _chw(torch)
    gray = (0.299 * x[0] + 0.587 * x[1] + 0.114 * x[2]).expand_as(x)
    return torch.lerp(gray, x, 1.5).clamp_(0.0, 1.0)


def probe_gamma(torch):
    return _chw(torch).pow(1 / 2.2)


def probe_rgb_to_hsv_value_saturation(torch):
    x = _chw(torch)
    maxc, _ = x.max(dim=0)
    minc = x.min(dim=0).values
    return maxc, torch.where(maxc > 0, (maxc - minc) / maxc.clamp(min=1e-8), torch.zeros_like(maxc))


def probe_invert_posterize(torch):
    img = image_uint8(torch)
    return 255 - img, img & 0xF0


def probe_solarize(torch):
    img = image_uint8(torch)
    return torch.where(img >= 128, 255 - img, img)


def probe_gaussian_blur_conv(torch):
    k = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0])
    k2 = torch.outer(k, k)
    k2 = (k2 / k2.sum()).expand(3, 1, 5, 5)
    return torch.nn.functional.conv2d(torch.nn.functional.pad(_batch(torch), (2, 2, 2, 2), mode="reflect"), k2, groups=3)


def probe_sobel_edges(torch):
    kx = torch.tensor([[-1.0, 0.0, 1.0], [-2.0, 0.0, 2.0], [-1.0, 0.0, 1.0]]).view(1, 1, 3, 3)
    gray = _batch(torch).mean(1, keepdim=True)
    gx = torch.nn.functional.conv2d(gray, kx, padding=1)
    gy = torch.nn.functional.conv2d(gray, kx.transpose(2, 3), padding=1)
    return torch.sqrt(gx ** 2 + gy ** 2)


# --- grids of images, labels, bucketing ---------------------------------------------------------

def probe_make_grid_style(torch):
    x = _batch(torch, n=4, h=4, w=4)
    nrow, pad = 2, 1
    padded = torch.nn.functional.pad(x, (pad, pad, pad, pad), value=1.0)
    rows = [torch.cat(list(padded[i:i + nrow]), dim=2) for i in range(0, padded.shape[0], nrow)]
    return torch.cat(rows, dim=1)


def probe_make_grid_fill(torch):
    x = _batch(torch, n=3, h=4, w=4)
    grid = torch.full((3, 2 * 5 + 1, 2 * 5 + 1), 0.0)
    for k in range(x.shape[0]):
        r, c = divmod(k, 2)
        grid.narrow(1, r * 5 + 1, 4).narrow(2, c * 5 + 1, 4).copy_(x[k])
    return grid


def probe_stack_images_hwc(torch):
    imgs = [image_uint8(torch, seed=i) for i in range(3)]
    return torch.stack(imgs).permute(0, 3, 1, 2).float().div(255)


def probe_one_hot(torch):
    labels = torch.tensor([0, 2, 1, 3])
    return torch.nn.functional.one_hot(labels, num_classes=5)


def probe_one_hot_infer_classes_float(torch):
    return torch.nn.functional.one_hot(torch.tensor([[1, 0], [2, 1]])).float()


def probe_one_hot_segmentation_permute(torch):
    mask = torch.tensor(np.random.default_rng(0).integers(0, 3, (2, 4, 4)))
    return torch.nn.functional.one_hot(mask, 3).permute(0, 3, 1, 2)


def probe_label_smoothing_one_hot(torch):
    y = torch.nn.functional.one_hot(torch.tensor([1, 0]), 3).float()
    return y * (1 - 0.1) + 0.1 / 3


def probe_mixup(torch):
    x = _batch(torch, n=4)
    y = torch.nn.functional.one_hot(torch.tensor([0, 1, 2, 1]), 3).float()
    lam = 0.7
    perm = torch.tensor([3, 2, 1, 0])
    return lam * x + (1 - lam) * x[perm], lam * y + (1 - lam) * y[perm]


def probe_cutmix_box(torch):
    x = _batch(torch, n=2, h=6, w=6)
    mixed = x.clone()
    mixed[:, :, 1:4, 2:5] = x.flip(0)[:, :, 1:4, 2:5]
    return mixed


def probe_bucketize(torch):
    boundaries = torch.tensor([0.0, 0.25, 0.5, 0.75])
    return torch.bucketize(data(torch, 8), boundaries), torch.bucketize(data(torch, 8), boundaries, right=True)


def probe_bucketize_int32(torch):
    return torch.bucketize(torch.tensor([0.1, 0.6, 2.0]), torch.tensor([0.5, 1.0]), out_int32=True)


def probe_searchsorted(torch):
    return torch.searchsorted(torch.tensor([1.0, 2.0, 4.0]), torch.tensor([[0.5, 2.0], [3.0, 5.0]]), side="right")


def probe_quantize_histogram(torch):
    x = torch.sigmoid(data(torch, 100))
    return torch.histc(x, bins=4, min=0, max=1)


def probe_clamp_inplace_tensor_bounds(torch):
    x = _batch(torch)
    lo = torch.tensor([-0.5, -1.0, 0.0]).view(1, 3, 1, 1)
    return x.clamp_(min=lo, max=1.0)


def probe_boxes_clip_and_scale(torch):
    boxes = torch.tensor([[-5.0, 2.0, 30.0, 40.0], [10.0, 10.0, 20.0, 50.0]])
    boxes[:, 0::2] = boxes[:, 0::2].clamp(0, 24)
    boxes[:, 1::2] = boxes[:, 1::2].clamp(0, 32)
    return boxes * torch.tensor([0.5, 0.5, 0.5, 0.5])


def probe_box_iou(torch):
    a = torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 3.0, 3.0]])
    b = torch.tensor([[1.0, 0.0, 2.0, 2.0]])
    lt = torch.max(a[:, None, :2], b[:, :2])
    rb = torch.min(a[:, None, 2:], b[:, 2:])
    wh = (rb - lt).clamp(min=0)
    inter = wh[..., 0] * wh[..., 1]
    area = lambda t: (t[:, 2] - t[:, 0]) * (t[:, 3] - t[:, 1])  # noqa: E731
    return inter / (area(a)[:, None] + area(b) - inter)


def probe_hflip_boxes(torch):
    boxes = torch.tensor([[1.0, 2.0, 4.0, 5.0]])
    w = 10
    return boxes[:, [2, 1, 0, 3]] * torch.tensor([-1, 1, -1, 1]) + torch.tensor([w, 0, w, 0])


def probe_pixel_shuffle_upscale(torch):
    return torch.nn.functional.pixel_shuffle(data(torch, 1, 8, 2, 3), 2)


def probe_channels_last_to_numpy(torch):
    return _batch(torch).permute(0, 2, 3, 1).cpu().numpy().shape


def probe_movedim(torch):
    return torch.movedim(_batch(torch), 1, -1)


def probe_chw_to_hwc_numpy_uint8(torch):
    x = _chw(torch)
    return (x.permute(1, 2, 0).numpy() * 255).astype("uint8")


def probe_tile_image(torch):
    return _chw(torch, h=2, w=2).repeat(1, 2, 3)


def probe_expand_gray_to_rgb(torch):
    gray = data(torch, 1, 4, 4)
    return gray.expand(3, -1, -1), gray.repeat(3, 1, 1)


def probe_random_erasing_fixed(torch):
    x = _chw(torch)
    x[:, 1:3, 2:4] = 0
    return x


def probe_masked_fill_image(torch):
    x = _batch(torch)
    return x.masked_fill(x < 0, 0.0)


def probe_pad_sequence_images(torch):
    from torch.nn.utils.rnn import pad_sequence
    seqs = [data(torch, 3, 2), data(torch, 1, 2, seed=1)]
    return pad_sequence(seqs, batch_first=True)


def probe_max_pool_with_indices_unpool(torch):
    x = _batch(torch, h=4, w=4)
    y, idx = torch.nn.functional.max_pool2d(x, 2, return_indices=True)
    return torch.nn.functional.max_unpool2d(y, idx, 2)


def probe_avg_pool_ceil(torch):
    return torch.nn.functional.avg_pool2d(_batch(torch, h=5, w=5), 2, ceil_mode=True, count_include_pad=False)


def probe_interpolate_bool_mask_error(torch):
    try:
        return torch.nn.functional.interpolate(torch.ones(1, 1, 2, 2, dtype=torch.bool), size=(4, 4))
    except RuntimeError:
        return "RuntimeError"
