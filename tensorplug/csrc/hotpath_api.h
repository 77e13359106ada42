// What _hotpath offers other compiled modules (autograd_core.cpp), through the capsule
// `tensorplug._hotpath._C_API`: the dispatcher's per-thread state lives in _hotpath's
// thread-local storage, and an op called from C must see it as a Python call would (the
// profiler's and autocast's keys come from it).
#pragma once

struct TensorplugHotpathAPI {
    // (keys | the thread's include) & the thread's mask: the key set a call with operands of
    // key set `keys` dispatches on.
    long long (*thread_keys)(long long keys);
    // The thread's mask, read and set as `dispatcher.local_state.mask` is: a composite op's
    // Autograd kernel clears the Autograd bit around the kernel below it.
    long long (*thread_mask)();
    void (*set_thread_mask)(long long mask);
};

#define TENSORPLUG_HOTPATH_CAPSULE "tensorplug._hotpath._C_API"
