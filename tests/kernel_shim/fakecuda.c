// A stand-in CUDA driver (libcuda.so.1) for rehearsing the GPU check on a CPU (tests only).
//
// Behind the real cuda-bindings it lets bench/gpu_check.sh and tests/test_kernels_gpu.py run end to
// end without a GPU: "device" memory is host memory, everything is synchronous, events read the
// wall clock, and cuLaunchKernel runs the kernels' CPU build (tests/kernel_shim/driver.cpp, found
// through FAKECUDA_SHIM). Modules are real NVRTC CUBINs (only their ELF header is checked) or PTX
// (only its ISA version is checked, against FAKECUDA_PTX_ISA); a kernel
// is found by the lowered name NVRTC reports, which is the shim library's own symbol for the same
// C++ instantiation, and launched by the runner the shim lists for it in `shim_kernels`. So new
// kernels need no change here: only a line in driver.cpp's table.
//
//   gcc -shared -fPIC -O2 -o DIR/libcuda.so.1 fakecuda.c -ldl      (tests/kernel_shim/host.py builds it)
//   LD_LIBRARY_PATH=DIR FAKECUDA_SHIM=/path/to/kernels.so python ...
//
// Environment:
//   FAKECUDA_SHIM=PATH       the shim library (kernels.so) that cuModuleLoadData loads
//   FAKECUDA_FAIL_AFTER=N    launch N+1 faults like a kernel that wrote out of bounds: it does not
//                            run, returns success (GPU faults surface later), and every later call
//                            fails with 700 (CUDA_ERROR_ILLEGAL_ADDRESS, sticky)
//   FAKECUDA_SMS=N           multiprocessor count (default 132, an H100's)
//   FAKECUDA_L2_KB=N         L2 size reported (default 256: keeps the check's L2 flush cheap here)
//   FAKECUDA_FREE_MB=N       free memory reported by cuMemGetInfo (default 2048)
//   FAKECUDA_CAPTURING=1     cuStreamIsCapturing reports an active capture
//   FAKECUDA_PTX_ISA=M.N     the newest PTX ISA its "JIT" takes (default 9.0, as driver 580 / CUDA 13.0):
//                            cuModuleLoadData of newer PTX fails with 222, CUDA_ERROR_UNSUPPORTED_PTX_VERSION
//   FAKECUDA_TRACE=1         log every call on stderr
// The device is named "Fake H100 (CPU shim)": results from it are rehearsals, never GPU results.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef void* CUmodule;
typedef void* CUfunction;
typedef void* CUstream;
typedef void* CUevent;
typedef unsigned long long CUdeviceptr;

enum { OK = 0, INVALID_VALUE = 1, OUT_OF_MEMORY = 2, INVALID_IMAGE = 200, INVALID_CONTEXT = 201,
       UNSUPPORTED_PTX_VERSION = 222, NOT_FOUND = 500, ILLEGAL_ADDRESS = 700, UNKNOWN = 999 };

static int trace = -1;
#define T(...)                                                     \
    do {                                                           \
        if (trace < 0) trace = getenv("FAKECUDA_TRACE") != NULL;   \
        if (trace) {                                               \
            fprintf(stderr, "[fakecuda] " __VA_ARGS__);            \
            fputc('\n', stderr);                                   \
        }                                                          \
    } while (0)

static long env_long(const char* name, long fallback) {
    const char* value = getenv(name);
    return value && *value ? atol(value) : fallback;
}

static int primary_context;  // its address is the one context
static CUcontext current = 0, pushed = 0;
static int sticky = 0;  // a faulted launch poisons the context, as on a GPU
static void* shim = 0;
static long launches = 0;

#define LIVE()                                                        \
    do {                                                              \
        if (sticky) return ILLEGAL_ADDRESS;                           \
        if (!current) {                                               \
            T("no current context in %s", __func__);                  \
            return INVALID_CONTEXT;                                   \
        }                                                             \
    } while (0)

CUresult cuInit(unsigned int flags) { T("cuInit(%u)", flags); return OK; }
CUresult cuDriverGetVersion(int* version) { *version = 13000; return OK; }

// cuda-bindings resolves every function through this: answer with this library's own symbols only.
CUresult cuGetProcAddress_v2(const char* symbol, void** pfn, int version, unsigned long long flags, int* status) {
    static void* library = 0;
    Dl_info self, found;
    if (!library && dladdr((void*)cuInit, &self)) library = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    void* p = library ? dlsym(library, symbol) : NULL;
    if (p && (!dladdr((void*)cuInit, &self) || !dladdr(p, &found) || found.dli_fbase != self.dli_fbase)) p = NULL;
    *pfn = p;
    if (status) *status = p ? 0 : 1;
    if (!p) T("cuGetProcAddress(%s, %d): not provided", symbol, version);
    return p ? OK : NOT_FOUND;
}
CUresult cuGetProcAddress(const char* symbol, void** pfn, int version, unsigned long long flags) {
    return cuGetProcAddress_v2(symbol, pfn, version, flags, NULL);
}
CUresult cuGetErrorName(CUresult error, const char** name) { *name = error == ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS" : "CUDA_ERROR_FAKE"; return OK; }
CUresult cuGetErrorString(CUresult error, const char** text) { *text = "fakecuda error"; return OK; }
CUresult cuGetExportTable(const void** table, const void* id) { *table = 0; return UNKNOWN; }

CUresult cuDeviceGetCount(int* count) { *count = 1; return OK; }
CUresult cuDeviceGet(CUdevice* device, int ordinal) { *device = ordinal; return ordinal == 0 ? OK : 101; }
CUresult cuDeviceGetName(char* name, int length, CUdevice device) { snprintf(name, length, "Fake H100 (CPU shim)"); return OK; }
CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
    switch (attribute) {
        case 75: *value = 9; break;  // compute capability major
        case 76: *value = 0; break;  // minor
        case 16: *value = (int)env_long("FAKECUDA_SMS", 132); break;  // multiprocessors
        case 38: *value = (int)env_long("FAKECUDA_L2_KB", 256) * 1024; break;  // L2 bytes
        default: *value = 0;
    }
    return OK;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) { *context = &primary_context; return OK; }
CUresult cuDevicePrimaryCtxRelease(CUdevice device) { return OK; }
CUresult cuCtxGetCurrent(CUcontext* context) { *context = current; return OK; }
CUresult cuCtxSetCurrent(CUcontext context) { T("cuCtxSetCurrent(%p)", context); current = context; return OK; }
CUresult cuCtxPushCurrent(CUcontext context) { pushed = current; current = context; return OK; }
CUresult cuCtxPopCurrent(CUcontext* context) { if (context) *context = current; current = pushed; pushed = 0; return OK; }
CUresult cuCtxGetDevice(CUdevice* device) { LIVE(); *device = 0; return OK; }
CUresult cuCtxSynchronize(void) { LIVE(); return OK; }
CUresult cuMemGetInfo(size_t* free_bytes, size_t* total) {
    LIVE();
    *free_bytes = (size_t)env_long("FAKECUDA_FREE_MB", 2048) << 20;
    *total = (size_t)80 << 30;
    return OK;
}

CUresult cuMemAlloc(CUdeviceptr* pointer, size_t nbytes) {
    LIVE();
    void* memory = malloc(nbytes ? nbytes : 1);
    if (!memory) return OUT_OF_MEMORY;
    *pointer = (CUdeviceptr)(uintptr_t)memory;
    return OK;
}
CUresult cuMemFree(CUdeviceptr pointer) { LIVE(); free((void*)(uintptr_t)pointer); return OK; }
CUresult cuMemsetD8(CUdeviceptr pointer, unsigned char value, size_t n) { LIVE(); memset((void*)(uintptr_t)pointer, value, n); return OK; }
CUresult cuMemsetD8Async(CUdeviceptr pointer, unsigned char value, size_t n, CUstream stream) { return cuMemsetD8(pointer, value, n); }
CUresult cuMemsetD32Async(CUdeviceptr pointer, unsigned int value, size_t n, CUstream stream) {
    LIVE();
    if ((uintptr_t)pointer % 4) return INVALID_VALUE;  // as on a GPU
    unsigned int* words = (unsigned int*)(uintptr_t)pointer;
    for (size_t i = 0; i < n; ++i) words[i] = value;
    return OK;
}
CUresult cuMemcpyHtoD(CUdeviceptr to, const void* from, size_t n) { LIVE(); memcpy((void*)(uintptr_t)to, from, n); return OK; }
CUresult cuMemcpyDtoH(void* to, CUdeviceptr from, size_t n) { LIVE(); memcpy(to, (void*)(uintptr_t)from, n); return OK; }
CUresult cuMemcpyDtoDAsync(CUdeviceptr to, CUdeviceptr from, size_t n, CUstream stream) {
    LIVE();
    memmove((void*)(uintptr_t)to, (void*)(uintptr_t)from, n);
    return OK;
}

static int stream_dummy;
CUresult cuStreamCreate(CUstream* stream, unsigned int flags) { LIVE(); *stream = &stream_dummy; return OK; }
CUresult cuStreamSynchronize(CUstream stream) { LIVE(); return OK; }
CUresult cuStreamDestroy(CUstream stream) { return OK; }
CUresult cuStreamGetCtx(CUstream stream, CUcontext* context) { LIVE(); *context = current; return OK; }
CUresult cuStreamIsCapturing(CUstream stream, int* status) { LIVE(); *status = env_long("FAKECUDA_CAPTURING", 0) ? 1 : 0; return OK; }

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}
CUresult cuEventCreate(CUevent* event, unsigned int flags) { LIVE(); *event = calloc(1, sizeof(double)); return OK; }
CUresult cuEventRecord(CUevent event, CUstream stream) { LIVE(); *(double*)event = now_ms(); return OK; }
CUresult cuEventSynchronize(CUevent event) { LIVE(); return OK; }
CUresult cuEventElapsedTime(float* ms, CUevent begin, CUevent end) { LIVE(); *ms = (float)(*(double*)end - *(double*)begin); return OK; }
CUresult cuEventElapsedTime_v2(float* ms, CUevent begin, CUevent end) { return cuEventElapsedTime(ms, begin, end); }
CUresult cuEventDestroy(CUevent event) { free(event); return OK; }

// What driver.cpp lists: each kernel's address and the runner that launches it over a grid.
typedef struct {
    const void* kernel;
    void (*run)(void** params, unsigned int grid, unsigned int block);
} ShimKernel;
typedef struct {
    void (*run)(void** params, unsigned int grid, unsigned int block);
    char name[160];
} Function;

CUresult cuModuleLoadData(CUmodule* module, const void* image) {
    LIVE();
    if (memcmp(image, "\x7f" "ELF", 4) != 0) {  // PTX text, as AOT engines carry: JIT-compiled if not too new
        const char* version = strstr((const char*)image, "\n.version ");
        int major, minor, newest_major = 9, newest_minor = 0;
        if (!version || sscanf(version, "\n.version %d.%d", &major, &minor) != 2) return INVALID_IMAGE;
        const char* newest = getenv("FAKECUDA_PTX_ISA");
        if (newest) sscanf(newest, "%d.%d", &newest_major, &newest_minor);
        if (major > newest_major || (major == newest_major && minor > newest_minor)) {
            T("cuModuleLoadData: PTX ISA %d.%d is newer than this driver's %d.%d", major, minor, newest_major, newest_minor);
            return UNSUPPORTED_PTX_VERSION;
        }
    }
    if (!shim) {
        const char* path = getenv("FAKECUDA_SHIM");
        shim = path ? dlopen(path, RTLD_NOW) : NULL;
        if (!shim) {
            fprintf(stderr, "fakecuda: cannot load the shim library FAKECUDA_SHIM=%s: %s\n", path ? path : "(unset)", dlerror());
            return UNKNOWN;
        }
    }
    *module = shim;
    return OK;
}
CUresult cuModuleGetFunction(CUfunction* function, CUmodule module, const char* name) {
    LIVE();
    const void* kernel = dlsym(module, name);
    const ShimKernel* table = (const ShimKernel*)dlsym(module, "shim_kernels");
    const int* count = (const int*)dlsym(module, "shim_kernel_count");
    for (int i = 0; kernel && table && count && i < *count; ++i) {
        if (table[i].kernel != kernel) continue;
        Function* found = calloc(1, sizeof(Function));
        found->run = table[i].run;
        snprintf(found->name, sizeof found->name, "%s", name);
        *function = found;
        T("cuModuleGetFunction(%s)", name);
        return OK;
    }
    T("cuModuleGetFunction(%s): not in the shim's kernel table", name);
    return NOT_FOUND;
}
CUresult cuFuncGetAttribute(int* value, int attribute, CUfunction function) {
    LIVE();
    switch (attribute) {
        case 0: *value = 1024; break;  // max threads per block
        case 4: *value = 40; break;  // registers
        default: *value = 0;  // shared, const and local bytes
    }
    return OK;
}
CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shared, CUstream stream, void** params, void** extra) {
    LIVE();
    Function* function = f;
    if (!params || !params[0]) return INVALID_VALUE;
    if (gy != 1 || gz != 1 || by != 1 || bz != 1 || gx == 0 || bx == 0 || bx > 1024 || gx > 2147483647u) return INVALID_VALUE;
    const long fail_after = env_long("FAKECUDA_FAIL_AFTER", -1);
    if (fail_after >= 0 && ++launches > fail_after) {
        T("cuLaunchKernel(%s): faults (FAKECUDA_FAIL_AFTER=%ld)", function->name, fail_after);
        sticky = 1;
        return OK;
    }
    T("cuLaunchKernel(%s, grid %u, block %u)", function->name, gx, bx);
    function->run(params, gx, bx);
    return OK;
}
