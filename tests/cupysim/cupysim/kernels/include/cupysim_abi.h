// The C interface between compiled kernels and the cupysim scheduler runtime
// (runtime/scheduler.cpp, built once per sanitizer mode as libcupysim_rt-<mode>.so).
#ifndef CUPYSIM_ABI_H
#define CUPYSIM_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cupysim_xyz {
  unsigned int x, y, z;
} cupysim_xyz;

// What kernel code reads through threadIdx/blockIdx/blockDim/gridDim: the first
// member of the scheduler's per-CUDA-thread record.
typedef struct cupysim_thread_view {
  cupysim_xyz thread_idx, block_idx, block_dim, grid_dim;
} cupysim_thread_view;

// The CUDA thread running on this OS thread (set by the scheduler at every switch).
extern __attribute__((tls_model("initial-exec"))) __thread cupysim_thread_view* cupysim_cur;

typedef struct cupysim_launch_cfg {
  unsigned int grid[3];
  unsigned int block[3];
  size_t dynamic_smem;
  int workers;  // OS threads running blocks (1 in sanitizer builds)
  int ftz;      // 1: single precision flushes subnormals (CuPy compiles with -ftz=true)
} cupysim_launch_cfg;

// Runs one CUDA thread: calls the kernel with a copy of the launch's arguments.
typedef void (*cupysim_body_fn)(void* args);

// Launch results (the Python side maps them to exceptions).
enum {
  CUPYSIM_OK = 0,
  CUPYSIM_FAULT = 1,   // barrier divergence, deadlock, invalid warp operation
  CUPYSIM_ASSERT = 2,  // a device-side assert failed
  CUPYSIM_TRAP = 3,    // __trap()
};

int cupysim_run(const cupysim_launch_cfg* cfg, cupysim_body_fn body, void* args, char* err,
                size_t errlen);

// Barriers. op: 0 __syncthreads, 1 _count, 2 _and, 3 _or.
int cupysim_syncthreads(int op, int pred, const char* file, int line);

// Warp-level exchange among the lanes of `mask` (see CUPYSIM_WARP_* below).
uint64_t cupysim_warp(int op, unsigned int mask, uint64_t value, int arg, int width,
                      const char* file, int line);

enum {
  CUPYSIM_WARP_SHFL_IDX = 0,
  CUPYSIM_WARP_SHFL_UP,
  CUPYSIM_WARP_SHFL_DOWN,
  CUPYSIM_WARP_SHFL_XOR,
  CUPYSIM_WARP_BALLOT,
  CUPYSIM_WARP_ANY,
  CUPYSIM_WARP_ALL,
  CUPYSIM_WARP_SYNC,
  CUPYSIM_WARP_REDUCE_ADD,   // arg: 1 signed, 0 unsigned
  CUPYSIM_WARP_REDUCE_MIN,
  CUPYSIM_WARP_REDUCE_MAX,
  CUPYSIM_WARP_REDUCE_AND,
  CUPYSIM_WARP_REDUCE_OR,
  CUPYSIM_WARP_REDUCE_XOR,
  CUPYSIM_WARP_MATCH_ANY,
};

// Base of the block's dynamic shared memory (extern __shared__).
void* cupysim_dynamic_shared(void);

// Device-side failures: the launch stops and reports them.
void cupysim_assert_fail(const char* expr, const char* file, int line, const char* func);
void cupysim_trap(const char* file, int line);

#ifdef __cplusplus
}
#endif

#endif  // CUPYSIM_ABI_H
