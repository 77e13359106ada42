// The caching host allocator and the Storage Python type.
//
// Freed blocks go to free lists binned by their rounded size and are handed out again for the
// same rounded size, so a training loop that allocates the same shapes every step touches no new
// pages after the first step. Big blocks come from mmap and keep their pages while cached.
#include "common.h"
#include "families.h"

#include <structmember.h>

#include <sys/mman.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tp {

namespace {

constexpr int64_t kSmallLimit = int64_t(1) << 20;   // <= 1 MiB: malloc'ed, rounded to 512 bytes
constexpr int64_t kSmallRound = 512;
constexpr int64_t kLargeRound = int64_t(2) << 20;   // > 1 MiB: mmap'ed, rounded to 2 MiB
constexpr int64_t kMaxRequest = int64_t(1) << 48;   // anything bigger is refused without trying

alignas(64) char g_empty_block[64];

class CachingAllocator {
  public:
    static int64_t round_size(int64_t n) {
        if (n <= kSmallLimit) return std::max<int64_t>(kSmallRound, (n + kSmallRound - 1) / kSmallRound * kSmallRound);
        return (n + kLargeRound - 1) / kLargeRound * kLargeRound;
    }

    // Returns nullptr when the system cannot provide the block.
    void* get(int64_t rounded) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            ++num_allocs_;
            auto it = free_.find(rounded);
            if (it != free_.end() && !it->second.empty()) {
                void* p = it->second.back();
                it->second.pop_back();
                cached_ -= rounded;
                ++hits_;
                note_allocated(rounded);
                return p;
            }
        }
        void* p = os_alloc(rounded);
        if (!p) {
            empty_cache();
            p = os_alloc(rounded);
            if (!p) {
                std::lock_guard<std::mutex> lock(mu_);
                --num_allocs_;
                return nullptr;
            }
        }
        std::lock_guard<std::mutex> lock(mu_);
        note_allocated(rounded);
        return p;
    }

    void put(void* p, int64_t rounded) {
        bool release = false;
        {
            std::lock_guard<std::mutex> lock(mu_);
            allocated_ -= rounded;
            ++frees_;
            if (cached_ + rounded <= limit_) {
                free_[rounded].push_back(p);
                cached_ += rounded;
            } else {
                release = true;
            }
        }
        if (release) os_free(p, rounded);
    }

    void empty_cache() {
        std::unordered_map<int64_t, std::vector<void*>> blocks;
        {
            std::lock_guard<std::mutex> lock(mu_);
            blocks.swap(free_);
            cached_ = 0;
        }
        for (auto& kv : blocks)
            for (void* p : kv.second) os_free(p, kv.first);
    }

    void set_limit(int64_t limit) {
        {
            std::lock_guard<std::mutex> lock(mu_);
            limit_ = limit;
            if (cached_ <= limit_) return;
        }
        empty_cache();
    }

    PyObject* stats() {
        std::lock_guard<std::mutex> lock(mu_);
        return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "allocated_bytes", (long long)allocated_,
                             "reserved_bytes", (long long)(allocated_ + cached_), "peak_allocated_bytes",
                             (long long)peak_, "num_allocs", (long long)num_allocs_, "num_cache_hits",
                             (long long)hits_, "num_frees", (long long)frees_, "cache_limit_bytes",
                             (long long)limit_);
    }

    void reset_peak() {
        std::lock_guard<std::mutex> lock(mu_);
        peak_ = allocated_;
    }

  private:
    void note_allocated(int64_t n) {
        allocated_ += n;
        if (allocated_ > peak_) peak_ = allocated_;
    }

    static void* os_alloc(int64_t n) {
        if (n <= kSmallLimit) return std::aligned_alloc(64, static_cast<size_t>(n));
        void* p = mmap(nullptr, static_cast<size_t>(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return nullptr;
#ifdef MADV_HUGEPAGE
        madvise(p, static_cast<size_t>(n), MADV_HUGEPAGE);
#endif
        return p;
    }

    static void os_free(void* p, int64_t n) {
        if (n <= kSmallLimit)
            std::free(p);
        else
            munmap(p, static_cast<size_t>(n));
    }

    std::mutex mu_;
    std::unordered_map<int64_t, std::vector<void*>> free_;
    int64_t allocated_ = 0, cached_ = 0, peak_ = 0;
    int64_t num_allocs_ = 0, hits_ = 0, frees_ = 0;
    int64_t limit_ = int64_t(2) << 30;
};

// Never destroyed: Storage objects may outlive static destruction at interpreter exit.
CachingAllocator& allocator() {
    static CachingAllocator* a = new CachingAllocator();
    return *a;
}

std::string human_bytes(int64_t n) {
    static const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = static_cast<double>(n);
    int u = 0;
    while (v >= 1024.0 && u < 6) {
        v /= 1024.0;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
    return buf;
}

[[noreturn]] void cannot_allocate(int64_t n) {
    raise(PyExc_MemoryError, "cpu: cannot allocate " + std::to_string(n) + " bytes (" + human_bytes(n) + ")");
}

// ----- the Python type ------------------------------------------------------------------------

void storage_dealloc(PyObject* self) {
    auto* s = reinterpret_cast<StorageObject*>(self);
    PyTypeObject* type = Py_TYPE(self);
    if (s->weakreflist) PyObject_ClearWeakRefs(self);
    if (s->block_size > 0) allocator().put(s->data, s->block_size);
    if (s->has_view) PyBuffer_Release(&s->view);
    type->tp_free(self);
    Py_DECREF(type);
}

int storage_getbuffer(PyObject* self, Py_buffer* view, int flags) {
    auto* s = reinterpret_cast<StorageObject*>(self);
    return PyBuffer_FillInfo(view, self, s->data, static_cast<Py_ssize_t>(s->nbytes), s->readonly, flags);
}

PyObject* storage_get_nbytes(PyObject* self, void*) {
    return PyLong_FromLongLong(reinterpret_cast<StorageObject*>(self)->nbytes);
}
PyObject* storage_get_data_ptr(PyObject* self, void*) {
    return PyLong_FromVoidPtr(reinterpret_cast<StorageObject*>(self)->data);
}
PyObject* storage_get_readonly(PyObject* self, void*) {
    return PyBool_FromLong(reinterpret_cast<StorageObject*>(self)->readonly);
}
PyObject* storage_repr(PyObject* self) {
    auto* s = reinterpret_cast<StorageObject*>(self);
    return PyUnicode_FromFormat("<tensorplug cpu Storage of %lld bytes at %p%s>", (long long)s->nbytes, s->data,
                                s->readonly ? ", read-only" : "");
}

PyGetSetDef storage_getset[] = {
    {"nbytes", storage_get_nbytes, nullptr, "Size of the storage in bytes.", nullptr},
    {"data_ptr", storage_get_data_ptr, nullptr, "Address of the first byte.", nullptr},
    {"readonly", storage_get_readonly, nullptr, "True when the memory must not be written.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyMemberDef storage_members[] = {
    {"__weaklistoffset__", T_PYSSIZET, offsetof(StorageObject, weakreflist), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr},
};

PyType_Slot storage_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(storage_dealloc)},
    {Py_tp_repr, reinterpret_cast<void*>(storage_repr)},
    {Py_tp_getset, storage_getset},
    {Py_tp_members, storage_members},
    {Py_bf_getbuffer, reinterpret_cast<void*>(storage_getbuffer)},
    {Py_tp_doc, const_cast<char*>("Host memory of the tensorplug CPU backend (from alloc() or wrap()).")},
    {0, nullptr},
};

PyType_Spec storage_spec = {
    "tensorplug.backends.cpu._kernels.Storage",
    sizeof(StorageObject),
    0,
    Py_TPFLAGS_DEFAULT,
    storage_slots,
};

StorageObject* new_storage() {
    auto* s = reinterpret_cast<StorageObject*>(StorageType->tp_alloc(StorageType, 0));
    if (!s) throw PythonErrorSet{};
    return s;
}

}  // namespace

PyTypeObject* StorageType = nullptr;

PyObject* storage_alloc(int64_t nbytes) {
    if (nbytes < 0) value_error("alloc: nbytes must be >= 0, got " + std::to_string(nbytes));
    if (nbytes > kMaxRequest) cannot_allocate(nbytes);
    StorageObject* s = new_storage();
    if (nbytes == 0) {
        s->data = g_empty_block;
        return reinterpret_cast<PyObject*>(s);
    }
    int64_t rounded = CachingAllocator::round_size(nbytes);
    void* p = allocator().get(rounded);
    if (!p) {
        Py_DECREF(s);
        cannot_allocate(nbytes);
    }
    s->data = static_cast<char*>(p);
    s->nbytes = nbytes;
    s->block_size = rounded;
    return reinterpret_cast<PyObject*>(s);
}

namespace {

PyObject* py_alloc(PyObject* const* args, Py_ssize_t n) {
    // The second argument, the backend contract's device index, is None on the CPU.
    if (n != 1 && n != 2) check_nargs(n, 1, "alloc");
    return storage_alloc(arg_int(args[0], "alloc", "nbytes"));
}

PyObject* py_wrap(PyObject* const* args, Py_ssize_t n) {
    check_nargs(n, 1, "wrap");
    StorageObject* s = new_storage();
    if (PyObject_GetBuffer(args[0], &s->view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) == 0) {
        s->readonly = 0;
    } else {
        PyErr_Clear();
        if (PyObject_GetBuffer(args[0], &s->view, PyBUF_C_CONTIGUOUS) != 0) {
            PyErr_Clear();
            Py_DECREF(s);
            raise(PyExc_TypeError, std::string("wrap: expected an object with a C-contiguous buffer, got ") +
                                       Py_TYPE(args[0])->tp_name);
        }
        s->readonly = 1;
    }
    s->has_view = 1;
    s->data = static_cast<char*>(s->view.buf);
    s->nbytes = static_cast<int64_t>(s->view.len);
    if (!s->data) s->data = g_empty_block;
    return reinterpret_cast<PyObject*>(s);
}

PyObject* py_memory_stats(PyObject* const*, Py_ssize_t n) {
    check_nargs(n, 0, "memory_stats");
    PyObject* d = allocator().stats();
    if (!d) throw PythonErrorSet{};
    return d;
}

PyObject* py_reset_peak(PyObject* const*, Py_ssize_t n) {
    check_nargs(n, 0, "reset_peak_memory_stats");
    allocator().reset_peak();
    return none();
}

PyObject* py_empty_cache(PyObject* const*, Py_ssize_t n) {
    check_nargs(n, 0, "empty_cache");
    allocator().empty_cache();
    return none();
}

PyObject* py_set_cache_limit(PyObject* const* args, Py_ssize_t n) {
    check_nargs(n, 1, "set_cache_limit");
    int64_t limit = arg_int(args[0], "set_cache_limit", "nbytes");
    if (limit < 0) value_error("set_cache_limit: nbytes must be >= 0");
    allocator().set_limit(limit);
    return none();
}

}  // namespace

void register_storage(PyObject* module, std::vector<PyMethodDef>& methods) {
    StorageType = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&storage_spec));
    if (!StorageType) throw PythonErrorSet{};
    Py_INCREF(StorageType);
    if (PyModule_AddObject(module, "Storage", reinterpret_cast<PyObject*>(StorageType)) != 0) throw PythonErrorSet{};
    methods.push_back(fast_method<py_alloc>("alloc", "alloc(nbytes, device_index=None) -> Storage from the caching allocator (64-byte aligned)."));
    methods.push_back(fast_method<py_wrap>("wrap", "wrap(obj) -> Storage over obj's C-contiguous buffer, zero-copy, keeping obj alive."));
    methods.push_back(fast_method<py_memory_stats>("memory_stats", "memory_stats() -> dict of allocator counters."));
    methods.push_back(fast_method<py_reset_peak>("reset_peak_memory_stats", "Set peak_allocated_bytes to the current allocated_bytes."));
    methods.push_back(fast_method<py_empty_cache>("empty_cache", "Return every cached block to the operating system."));
    methods.push_back(fast_method<py_set_cache_limit>("set_cache_limit", "set_cache_limit(nbytes): most bytes kept in the cache (default 2 GiB)."));
}

}  // namespace tp
