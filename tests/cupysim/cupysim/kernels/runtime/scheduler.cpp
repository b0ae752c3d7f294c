// cupysim's CUDA-thread scheduler: runs a grid of blocks on the host.
//
// Blocks are shared out among `workers` OS threads (the launching thread and a
// reused pool); one worker runs one block at a time, so per-worker storage is
// per-block storage (static __shared__ is thread_local in the kernel library).
// The threads of a block run as fibers on their worker: user-mode stacks switched
// by a hand-written x86-64 routine (measured: ~8 ns a switch between two fibers;
// ucontext's swapcontext makes a signal-mask system call per switch: ~650 ns).
// A fiber is a *runner*: it executes CUDA threads one after another until one
// blocks, so a barrier-free kernel needs one stack and no switch at all; a thread
// that blocks (__syncthreads, a warp operation) keeps its runner, and another
// runner starts the next thread.
//
// __syncthreads is a counting barrier; the last thread to arrive wakes the others.
// Warp operations over a whole warp run as dataflow (eager_warp_op); those over
// part of one collect the lanes of their mask, and the last lane computes every
// lane's result. If nothing can run while threads still wait, the block can never
// finish on a GPU either (CUDA C++ Programming Guide, "Synchronization Functions":
// __syncthreads in conditional code only if the condition is uniform across the
// block; "Warp Shuffle Functions": every lane of the mask must execute the same
// intrinsic): the launch stops with a description instead of hanging.
//
// Sanitizer builds (CUPYSIM_ASAN / CUPYSIM_TSAN) run blocks on one worker and tell
// the sanitizer about every stack switch; under ThreadSanitizer each CUDA thread
// gets its own fiber and a switch implies no ordering, so only the barriers (an
// explicit release/acquire per barrier generation) order shared-memory accesses:
// a missing __syncthreads is a reported data race.

#include "cupysim_abi.h"

#include <pthread.h>
#include <xmmintrin.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#if defined(CUPYSIM_ASAN)
extern "C" {
void __sanitizer_start_switch_fiber(void** fake_stack_save, const void* bottom, size_t size);
void __sanitizer_finish_switch_fiber(void* fake_stack_save, const void** bottom_old,
                                     size_t* size_old);
void __asan_poison_memory_region(void const volatile* addr, size_t size);
void __asan_unpoison_memory_region(void const volatile* addr, size_t size);
void __asan_set_error_report_callback(void (*callback)(const char*));
}
// A report does not stop the faulting access (kernels build with
// -fsanitize-recover), so the launch stops at its next scheduling point instead of
// letting the rest of the grid write through a bad index.
static std::atomic<bool> g_sanitizer_report{false};
static void on_sanitizer_report(const char*) { g_sanitizer_report.store(true); }
#define SANITIZER_REPORTED() g_sanitizer_report.load(std::memory_order_relaxed)
#else
#define SANITIZER_REPORTED() false
#endif
#if defined(CUPYSIM_TSAN)
extern "C" {
void* __tsan_get_current_fiber(void);
void* __tsan_create_fiber(unsigned flags);
void __tsan_set_fiber_name(void* fiber, const char* name);
void __tsan_switch_to_fiber(void* fiber, unsigned flags);
void __tsan_acquire(void* addr);
void __tsan_release(void* addr);
}
#define TSAN_ACQUIRE(p) __tsan_acquire((void*)(p))
#define TSAN_RELEASE(p) __tsan_release((void*)(p))
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)0)
#endif

#if defined(CUPYSIM_ASAN) || defined(CUPYSIM_TSAN)
#define CUPYSIM_SERIAL 1
static const size_t kStackSize = 1 << 20;
#else
static const size_t kStackSize = 256 << 10;
#endif

// H100: cudaDevAttrMaxSharedMemoryPerBlockOptin (the launcher checks the limits).
static const size_t kDynamicSmemCapacity = 232448;
static const unsigned kMaxThreads = 1024;

extern "C" {
__attribute__((tls_model("initial-exec"))) __thread cupysim_thread_view* cupysim_cur = nullptr;
}

// --- context switch ---------------------------------------------------------------
// Saves the callee-saved registers of the System V x86-64 ABI on the current stack,
// stores the stack pointer in *save, loads `next` and restores its registers.
extern "C" void cupysim_switch(void** save, void* next);
#if defined(__x86_64__)
asm(R"(
  .text
  .globl cupysim_switch
  .hidden cupysim_switch
  .type cupysim_switch,@function
cupysim_switch:
  .cfi_startproc
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .cfi_endproc
  .size cupysim_switch, .-cupysim_switch
)");
#else
#error "cupysim's fiber switch is written for x86-64"
#endif

namespace {

enum State : unsigned char { UNSTARTED, RUNNING, READY, AT_BARRIER, AT_WARP, DONE };

struct Fiber;

struct Thread {
  cupysim_thread_view view;  // first: kernel code reads it through cupysim_cur
  unsigned linear, lane, warp;
  State state;
  Fiber* fiber;
  uint64_t post;  // this lane's operand of the pending (partial-mask) warp operation
  int post_arg;
  uint64_t result;  // what the warp operation or barrier returns to it
  // Full-warp operations (see eager_warp_op): how many this lane has posted and
  // completed, the lanes waiting for its next post, and what it waits for.
  unsigned long long posted_ops, done_ops, wait_k;
  unsigned waiters, wait_src;
  unsigned char wait_kind;
};

enum WaitKind : unsigned char { WAIT_NONE, WAIT_SOURCE, WAIT_ALL, WAIT_SLOT };

struct Fiber {
  void* sp = nullptr;
  char* map = nullptr;  // mmap'd region: guard page + stack
  size_t map_size = 0;
  Thread* thread = nullptr;
  void* asan_fake_stack = nullptr;
  void* tsan = nullptr;
  size_t color = 0;  // bytes left unused at the top of the stack
  char name[64];      // the CUDA thread it runs, for ThreadSanitizer's reports
  char* stack_lo() const { return map + getpagesize(); }
  size_t stack_size() const { return map_size - getpagesize(); }
};

struct WarpOp {
  unsigned arrived = 0, mask = 0;
  int op = 0;
  const char* file = nullptr;
  int line = 0;
  unsigned first_lane = 0;
  unsigned char tsan_sync = 0;
};

// One full-warp operation instance: every lane's operand, kept until all lanes
// have completed it. Lanes run ahead of each other by up to kHistory operations.
static const unsigned kHistory = 16;

struct alignas(64) WarpSlot {
  unsigned epoch = 0;  // the block it belongs to
  unsigned long long seq = 0;
  int op = 0, width = 0, is_signed = 0;
  unsigned mask = 0, first_lane = 0, posted = 0, waiting = 0;
  const char* file = nullptr;
  int line = 0;
  unsigned char tsan_sync = 0;
  uint64_t value[32];
};

struct EagerWarp {
  unsigned long long min_done = 0;  // a lower bound of the lanes' completed operations
  unsigned slot_waiters = 0;
  WarpSlot slots[kHistory];
};

struct Launch {
  const cupysim_launch_cfg* cfg;
  cupysim_body_fn body;
  void* args;
  unsigned long long total;
  std::atomic<unsigned long long> next{0};
  std::atomic<int> failed{0};
  std::mutex mu;
  int code = CUPYSIM_OK;
  std::string message;

  void fail(int c, const std::string& m) {
    std::lock_guard<std::mutex> g(mu);
    if (code == CUPYSIM_OK) {
      code = c;
      message = m;
    }
    failed.store(1);
  }
};

const char* op_name(int op) {
  switch (op) {
    case CUPYSIM_WARP_SHFL_IDX: return "__shfl_sync";
    case CUPYSIM_WARP_SHFL_UP: return "__shfl_up_sync";
    case CUPYSIM_WARP_SHFL_DOWN: return "__shfl_down_sync";
    case CUPYSIM_WARP_SHFL_XOR: return "__shfl_xor_sync";
    case CUPYSIM_WARP_BALLOT: return "__ballot_sync";
    case CUPYSIM_WARP_ANY: return "__any_sync";
    case CUPYSIM_WARP_ALL: return "__all_sync";
    case CUPYSIM_WARP_SYNC: return "__syncwarp";
    case CUPYSIM_WARP_REDUCE_ADD: return "__reduce_add_sync";
    case CUPYSIM_WARP_REDUCE_MIN: return "__reduce_min_sync";
    case CUPYSIM_WARP_REDUCE_MAX: return "__reduce_max_sync";
    case CUPYSIM_WARP_REDUCE_AND: return "__reduce_and_sync";
    case CUPYSIM_WARP_REDUCE_OR: return "__reduce_or_sync";
    case CUPYSIM_WARP_REDUCE_XOR: return "__reduce_xor_sync";
    case CUPYSIM_WARP_MATCH_ANY: return "__match_any_sync";
  }
  return "warp operation";
}

const char* barrier_name(int op) {
  static const char* names[] = {"__syncthreads", "__syncthreads_count", "__syncthreads_and",
                                "__syncthreads_or"};
  return names[op & 3];
}

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

std::string lanes_text(unsigned mask) {
  std::string out;
  for (unsigned l = 0; l < 32; ++l)
    if (mask >> l & 1u) out += (out.empty() ? "" : ",") + std::to_string(l);
  return "{" + out + "}";
}

#if defined(CUPYSIM_SERIAL)
// One worker at a time: one dynamic shared memory buffer for the process (with a
// tail that stays poisoned under AddressSanitizer, past the largest launch).
alignas(256) unsigned char g_dynamic_smem[kDynamicSmemCapacity + 256];
#endif

struct Worker {
  void* sched_sp = nullptr;
  void* sched_asan_fake_stack = nullptr;
  const void* main_stack_lo = nullptr;
  size_t main_stack_size = 0;
  void* tsan_main = nullptr;
  std::vector<Fiber*> fibers, idle, spent;
  Fiber* starting = nullptr;
  Thread threads[kMaxThreads];
  WarpOp warps[kMaxThreads / 32];
  unsigned warp_lanes[kMaxThreads / 32];  // the lanes each warp of the block has
  EagerWarp eager[kMaxThreads / 32];
  unsigned epoch = 0;
  Fiber* queue[kMaxThreads];  // ring of runnable fibers (each thread is in it at most once)
  unsigned q_head = 0, q_size = 0;

  Launch* launch = nullptr;
  cupysim_xyz block{}, block_dim{}, grid_dim{};
  unsigned n = 0, next_unstarted = 0, finished = 0;
  unsigned bar_arrived = 0, bar_gen = 0;
  int bar_op = 0;
  long long bar_acc = 0;
  const char* bar_file = nullptr;
  int bar_line = 0;
  unsigned bar_first = 0;
  std::vector<Thread*> bar_waiters;
  bool aborted = false;
  unsigned char tsan_start = 0, tsan_end = 0, tsan_bar[2] = {0, 0};
#if !defined(CUPYSIM_SERIAL)
  unsigned char* dynamic_smem = nullptr;
#endif

  Worker() {
#if !defined(CUPYSIM_SERIAL)
    dynamic_smem = static_cast<unsigned char*>(aligned_alloc(256, kDynamicSmemCapacity));
#endif
    bar_waiters.reserve(kMaxThreads);
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* lo;
      size_t size;
      pthread_attr_getstack(&attr, &lo, &size);
      main_stack_lo = lo;
      main_stack_size = size;
      pthread_attr_destroy(&attr);
    }
#if defined(CUPYSIM_TSAN)
    tsan_main = __tsan_get_current_fiber();
#endif
  }
  ~Worker() {
    for (Fiber* f : fibers) {
      munmap(f->map, f->map_size);
      delete f;
    }
#if !defined(CUPYSIM_SERIAL)
    free(dynamic_smem);
#endif
  }

  std::string where() const {
    return format("block (%u,%u,%u)", block.x, block.y, block.z);
  }
  std::string thread_text(const Thread* t) const {
    return format("thread (%u,%u,%u)", t->view.thread_idx.x, t->view.thread_idx.y,
                  t->view.thread_idx.z);
  }
};

// Kept small: the library's whole TLS block is static (cupysim_cur is initial-exec),
// so the worker itself lives on the heap.
__attribute__((tls_model("initial-exec"))) thread_local Worker* tls_worker = nullptr;
thread_local std::unique_ptr<Worker> tls_worker_owner;

Worker* worker() {
  if (!tls_worker) {
    tls_worker_owner.reset(new Worker);
    tls_worker = tls_worker_owner.get();
  }
  return tls_worker;
}

void fiber_entry();

void fiber_reset(Fiber* f) {
  // The first switch to a fresh fiber pops six zero registers and "returns" into
  // fiber_entry with a 16-byte aligned stack minus the return-address slot. Stack
  // tops are staggered by a few cache lines per fiber: equally aligned tops would
  // all fall in the same cache sets and evict each other at every switch.
  uintptr_t top = reinterpret_cast<uintptr_t>(f->map + f->map_size) - f->color;
  top &= ~uintptr_t(15);
  void** sp = reinterpret_cast<void**>(top);
  *--sp = nullptr;  // fiber_entry's (never used) return address
  *--sp = reinterpret_cast<void*>(&fiber_entry);
  for (int i = 0; i < 6; ++i) *--sp = nullptr;
  f->sp = sp;
  f->thread = nullptr;
  f->asan_fake_stack = nullptr;
}

Fiber* fiber_new(Worker* w) {
  Fiber* f = new Fiber;
  size_t page = getpagesize();
  f->map_size = kStackSize + page;
  void* p = mmap(nullptr, f->map_size, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "cupysim: cannot map a fiber stack\n");
    abort();
  }
  f->map = static_cast<char*>(p);
  mprotect(f->map, page, PROT_NONE);  // a stack overflow faults instead of corrupting
  f->color = (w->fibers.size() % 128) * 9 * 64;
#if defined(CUPYSIM_TSAN)
  f->tsan = __tsan_create_fiber(0);
#endif
  fiber_reset(f);
  w->fibers.push_back(f);
  return f;
}

// Switch from `from` (nullptr: the worker's own stack) to `to` (idem).
void switch_to(Worker* w, Fiber* from, Fiber* to) {
  void** save = from ? &from->sp : &w->sched_sp;
  void* next = to ? to->sp : w->sched_sp;
#if defined(CUPYSIM_ASAN)
  void** fake = from ? &from->asan_fake_stack : &w->sched_asan_fake_stack;
  __sanitizer_start_switch_fiber(fake, to ? to->stack_lo() : w->main_stack_lo,
                                 to ? to->stack_size() : w->main_stack_size);
#endif
#if defined(CUPYSIM_TSAN)
  __tsan_switch_to_fiber(to ? to->tsan : w->tsan_main, 1 /* __tsan_switch_to_fiber_no_sync */);
#endif
  if (to) w->starting = to;
  cupysim_switch(save, next);
#if defined(CUPYSIM_ASAN)
  __sanitizer_finish_switch_fiber(*fake, nullptr, nullptr);
#endif
}

Fiber* idle_runner(Worker* w) {
  if (!w->idle.empty()) {
    Fiber* f = w->idle.back();
    w->idle.pop_back();
    return f;
  }
  return fiber_new(w);
}

void enqueue(Worker* w, Fiber* f) {
  w->queue[(w->q_head + w->q_size++) % kMaxThreads] = f;
}

// Lanes woken by a warp operation run next, so a warp runs through a sequence of
// shuffles with the stacks of its 32 lanes hot in cache, not the whole block's.
void enqueue_front(Worker* w, Fiber* f) {
  w->q_head = (w->q_head + kMaxThreads - 1) % kMaxThreads;
  w->queue[w->q_head] = f;
  ++w->q_size;
}

Fiber* dequeue(Worker* w) {
  Fiber* f = w->queue[w->q_head];
  w->q_head = (w->q_head + 1) % kMaxThreads;
  --w->q_size;
  return f;
}

std::string describe_stall(Worker* w) {
  std::string msg = format("cupysim: %s of a %ux%ux%u block can never finish:", w->where().c_str(),
                           w->block_dim.x, w->block_dim.y, w->block_dim.z);
  if (w->bar_arrived) {
    msg += format(" %u of %u threads wait at %s() (%s:%d), which every thread of the block "
                  "must reach;",
                  w->bar_arrived, w->n, barrier_name(w->bar_op), w->bar_file, w->bar_line);
  }
  if (w->finished) msg += format(" %u threads have exited;", w->finished);
  for (unsigned i = 0; i < w->n; ++i) {
    const Thread& t = w->threads[i];
    if (t.state != AT_WARP || t.wait_kind == WAIT_NONE) continue;
    const WarpSlot& slot = w->eager[t.warp].slots[t.wait_k % kHistory];
    const Thread& src = w->threads[t.warp * 32 + t.wait_src];
    if (t.wait_kind == WAIT_SOURCE) {
      msg += format(" warp %u, lane %u waits in %s(mask 0x%08x) (%s:%d) for lane %u, which %s "
                    "after %llu of the warp's operations;",
                    t.warp, t.lane, op_name(slot.op), slot.mask, slot.file, slot.line,
                    t.wait_src, src.state == DONE ? "exited" : "is blocked", src.posted_ops);
    } else if (t.wait_kind == WAIT_ALL) {
      msg += format(" warp %u, lane %u waits in %s(mask 0x%08x) (%s:%d) for lanes %s;", t.warp,
                    t.lane, op_name(slot.op), slot.mask, slot.file, slot.line,
                    lanes_text(slot.mask & ~slot.posted).c_str());
    } else {
      msg += format(" warp %u, lane %u is %u warp operations ahead of a lane that exited or "
                    "waits;",
                    t.warp, t.lane, kHistory);
    }
    break;  // the first waiter tells the story
  }
  for (unsigned k = 0; k < (w->n + 31) / 32; ++k) {
    const WarpOp& op = w->warps[k];
    if (!op.arrived) continue;
    msg += format(" warp %u: lanes %s wait in %s(mask 0x%08x) (%s:%d) for lanes %s;", k,
                  lanes_text(op.arrived).c_str(), op_name(op.op), op.mask, op.file, op.line,
                  lanes_text(op.mask & ~op.arrived).c_str());
  }
  msg += " (CUDA C++ Programming Guide: __syncthreads() in conditional code only if the "
         "condition is the same in the whole block; every lane named in a *_sync mask must "
         "execute the same intrinsic)";
  return msg;
}

// Give up the block: the launch fails, the worker's stack takes over, and this
// fiber is never resumed (run_block resets every fiber).
[[noreturn, gnu::cold, gnu::noinline]] void abort_block(Worker* w, Fiber* self, int code,
                                                      const std::string& msg) {
  w->aborted = true;
  w->launch->fail(code, msg);
  switch_to(w, self, nullptr);
  __builtin_trap();  // unreachable: aborted fibers are reset, not resumed
}

// The error paths, out of line so the hot paths keep small stack frames (every
// fiber's frames are touched at each switch).
[[noreturn, gnu::cold, gnu::noinline]] void fail_stall(Worker* w, Fiber* self) {
  abort_block(w, self, CUPYSIM_FAULT, describe_stall(w));
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_barrier(Worker* w, Thread* t, int op,
                                                       const char* file, int line) {
  abort_block(w, t->fiber, CUPYSIM_FAULT,
              format("cupysim: threads of %s reached different barriers: %s at %s() "
                     "(%s:%d), %s at %s() (%s:%d) (CUDA C++ Programming Guide, "
                     "\"Synchronization Functions\": a barrier in conditional code must be "
                     "reached by the whole block)",
                     w->where().c_str(), w->thread_text(&w->threads[w->bar_first]).c_str(),
                     barrier_name(w->bar_op), w->bar_file, w->bar_line,
                     w->thread_text(t).c_str(), barrier_name(op), file, line));
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_warp(Worker* w, Thread* t, int opcode,
                                                    unsigned mask, int width, const char* file,
                                                    int line) {
  const unsigned lane = t->lane;
  const unsigned existing = w->warp_lanes[t->warp];
  const WarpOp& op = w->warps[t->warp];
  std::string msg;
  if (!(mask >> lane & 1u)) {
    msg = format("cupysim: %s(mask 0x%08x) called by lane %u of warp %u in %s, which is not in "
                 "its mask (%s:%d); undefined on a GPU (CUDA C++ Programming Guide, \"Warp "
                 "Shuffle Functions\")",
                 op_name(opcode), mask, lane, t->warp, w->where().c_str(), file, line);
  } else if (mask & ~existing) {
    msg = format("cupysim: %s(mask 0x%08x) in %s: warp %u has only lanes %s (a block of %u "
                 "threads), so lanes %s can never take part (%s:%d)",
                 op_name(opcode), mask, w->where().c_str(), t->warp,
                 lanes_text(existing).c_str(), w->n, lanes_text(mask & ~existing).c_str(), file,
                 line);
  } else if (op.arrived && (op.mask != mask || op.op != opcode)) {
    msg = format("cupysim: lanes of warp %u in %s disagree: lane %u is in %s(mask 0x%08x) "
                 "(%s:%d), lane %u calls %s(mask 0x%08x) (%s:%d) (CUDA C++ Programming Guide, "
                 "\"Warp Shuffle Functions\")",
                 t->warp, w->where().c_str(), op.first_lane, op_name(op.op), op.mask, op.file,
                 op.line, lane, op_name(opcode), mask, file, line);
  } else {
    msg = format("cupysim: %s width %d is not a power of two in [1, 32] (%s:%d)",
                 op_name(opcode), width, file, line);
  }
  abort_block(w, t->fiber, CUPYSIM_FAULT, msg);
}

[[noreturn, gnu::cold, gnu::noinline]] void fail_source_lane(Worker* w, Thread* caller,
                                                           const WarpOp& op, unsigned lane,
                                                           long src) {
  abort_block(w, caller->fiber, CUPYSIM_FAULT,
              format("cupysim: %s: in %s, warp %u, lane %u reads lane %ld, which is not in the "
                     "mask 0x%08x (%s:%d); the value is undefined on a GPU (CUDA C++ "
                     "Programming Guide, \"Warp Shuffle Functions\")",
                     op_name(op.op), w->where().c_str(), caller->warp, lane, src, op.mask,
                     op.file, op.line));
}

// The fiber to run when the current one cannot continue; nullptr: the worker's own
// stack (the block is finished or stalled).
Fiber* pick_next(Worker* w, Fiber* self) {
  if (w->q_size) return dequeue(w);
  if (w->next_unstarted < w->n) return idle_runner(w);
  if (w->finished == w->n) return nullptr;
  fail_stall(w, self);
}

Thread* current_thread() { return reinterpret_cast<Thread*>(cupysim_cur); }

void block_current(Worker* w, Thread* t) {
  Fiber* self = t->fiber;
  switch_to(w, self, pick_next(w, self));
  cupysim_cur = &t->view;
  t->state = RUNNING;
}

void run_thread(Worker* w, Fiber* self, Thread* t) {
  t->fiber = self;
  self->thread = t;
  t->state = RUNNING;
  cupysim_cur = &t->view;
#if defined(CUPYSIM_TSAN)
  snprintf(self->name, sizeof self->name, "CUDA block (%u,%u,%u) thread (%u,%u,%u)",
           w->block.x, w->block.y, w->block.z, t->view.thread_idx.x, t->view.thread_idx.y,
           t->view.thread_idx.z);
  __tsan_set_fiber_name(self->tsan, self->name);
#endif
  TSAN_ACQUIRE(&w->tsan_start);
  w->launch->body(w->launch->args);
  TSAN_RELEASE(&w->tsan_end);
  t->state = DONE;
  ++w->finished;
  self->thread = nullptr;
  cupysim_cur = nullptr;
}

void init_thread(Worker* w, Thread* t, unsigned linear) {
  t->linear = linear;
  t->lane = linear % 32;
  t->warp = linear / 32;
  t->view.thread_idx.x = linear % w->block_dim.x;
  t->view.thread_idx.y = (linear / w->block_dim.x) % w->block_dim.y;
  t->view.thread_idx.z = linear / (w->block_dim.x * w->block_dim.y);
  t->view.block_idx = w->block;
  t->view.block_dim = w->block_dim;
  t->view.grid_dim = w->grid_dim;
  t->state = UNSTARTED;
}

// Threads start warp by warp, each warp's lanes from the highest down: then a
// __shfl_down_sync finds its source lane's operand already posted and nobody waits.
unsigned start_order(const Worker* w, unsigned i) {
  const unsigned base = i & ~31u, lanes = w->n - base < 32 ? w->n - base : 32;
  return base + lanes - 1 - (i & 31u);
}

[[noreturn, gnu::cold]] void stop_after_report(Worker* w, Fiber* self) {
  abort_block(w, self, CUPYSIM_FAULT, "cupysim: launch stopped after a sanitizer report");
}

[[noreturn]] void runner_loop(Worker* w, Fiber* self) {
  for (;;) {
    while (w->next_unstarted < w->n) {
      if (SANITIZER_REPORTED()) stop_after_report(w, self);
      const unsigned linear = start_order(w, w->next_unstarted++);
      Thread* t = &w->threads[linear];
      init_thread(w, t, linear);
      run_thread(w, self, t);
#if defined(CUPYSIM_TSAN)
      break;  // one CUDA thread per fiber, so ThreadSanitizer tells them apart
#endif
    }
#if defined(CUPYSIM_TSAN)
    w->spent.push_back(self);
#else
    w->idle.push_back(self);
#endif
    switch_to(w, self, pick_next(w, self));
  }
}

void fiber_entry() {
#if defined(CUPYSIM_ASAN)
  __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
#endif
  Worker* w = worker();
  runner_loop(w, w->starting);
}

// Every lane of a warp must have executed the same full-warp operations: a lane
// that exits early leaves the others' operations without it (undefined on a GPU).
void check_warp_ops(Worker* w) {
  for (unsigned k = 0; k < (w->n + 31) / 32; ++k) {
    const Thread* lanes = &w->threads[k * 32];
    unsigned long long most = 0, fewest = ~0ull;
    for (unsigned l = 0; l < 32; ++l) {
      if (!(w->warp_lanes[k] >> l & 1u)) continue;
      most = lanes[l].posted_ops > most ? lanes[l].posted_ops : most;
      fewest = lanes[l].posted_ops < fewest ? lanes[l].posted_ops : fewest;
    }
    if (most == fewest) continue;
    unsigned short_lanes = 0;
    for (unsigned l = 0; l < 32; ++l)
      if ((w->warp_lanes[k] >> l & 1u) && lanes[l].posted_ops < most) short_lanes |= 1u << l;
    const WarpSlot& last = w->eager[k].slots[(most - 1) % kHistory];
    w->launch->fail(CUPYSIM_FAULT,
                    format("cupysim: %s, warp %u: lanes %s exited after %llu full-warp "
                           "operations, while the others executed %llu (the last: %s(mask "
                           "0x%08x) at %s:%d); every lane named in a *_sync mask must execute "
                           "the operation (CUDA C++ Programming Guide, \"Warp Shuffle "
                           "Functions\")",
                           w->where().c_str(), k, lanes_text(short_lanes).c_str(), fewest, most,
                           op_name(last.op), last.mask, last.file, last.line));
    w->aborted = true;
    return;
  }
}

void run_block(Worker* w, Launch* L, unsigned long long index) {
  const cupysim_launch_cfg* c = L->cfg;
  w->launch = L;
  w->block.x = static_cast<unsigned>(index % c->grid[0]);
  w->block.y = static_cast<unsigned>(index / c->grid[0] % c->grid[1]);
  w->block.z = static_cast<unsigned>(index / (1ull * c->grid[0] * c->grid[1]));
  w->block_dim = {c->block[0], c->block[1], c->block[2]};
  w->grid_dim = {c->grid[0], c->grid[1], c->grid[2]};
  w->n = c->block[0] * c->block[1] * c->block[2];
  w->next_unstarted = w->finished = 0;
  w->bar_arrived = 0;
  w->bar_waiters.clear();
  ++w->epoch;
  // Lanes read each other's operation counts before those lanes start: reset all.
  for (unsigned i = 0; i < w->n; ++i) {
    Thread* t = &w->threads[i];
    t->posted_ops = t->done_ops = 0;
    t->waiters = 0;
    t->wait_kind = WAIT_NONE;
    t->state = UNSTARTED;
  }
  for (unsigned k = 0; k < (w->n + 31) / 32; ++k) {
    w->warps[k].arrived = 0;
    w->eager[k].min_done = 0;
    w->eager[k].slot_waiters = 0;
    const unsigned lanes = w->n - 32 * k;
    w->warp_lanes[k] = lanes >= 32 ? ~0u : (1u << lanes) - 1;
  }
  w->q_head = w->q_size = 0;
  w->aborted = false;
#if defined(CUPYSIM_TSAN)
  // ThreadSanitizer orders a new fiber after its creator: created by a runner in
  // mid-block, it would hide that runner's races. Create them all from here.
  while (w->fibers.size() < w->n) w->idle.push_back(fiber_new(w));
#endif
  TSAN_RELEASE(&w->tsan_start);
  switch_to(w, nullptr, idle_runner(w));
  TSAN_ACQUIRE(&w->tsan_end);
  for (Fiber* f : w->spent) w->idle.push_back(f);
  w->spent.clear();
  if (!w->aborted) check_warp_ops(w);
  if (w->aborted) {
    // Fibers stopped mid-kernel hold dead frames: restart every one from the top.
    w->idle.clear();
    for (Fiber* f : w->fibers) {
#if defined(CUPYSIM_ASAN)
      __asan_unpoison_memory_region(f->stack_lo(), f->stack_size());
#endif
      fiber_reset(f);
      w->idle.push_back(f);
    }
  }
}

// CuPy compiles every kernel with -ftz=true (cupy/cuda/compiler.py): float32 subnormals
// are read and written as zeros (cupysim/ftz.py). MXCSR's FTZ and DAZ bits are the same
// rule for SSE/AVX single precision; each worker sets them for the launch and puts its
// own mode back (the pool's threads outlive launches).
struct FlushMode {
  unsigned int saved;
  explicit FlushMode(bool on) : saved(_mm_getcsr()) {
    if (on) _mm_setcsr(saved | 0x8040u);
  }
  ~FlushMode() { _mm_setcsr(saved); }
};

void run_blocks(Launch* L) {
  FlushMode flush(L->cfg->ftz != 0);
  Worker* w = worker();
  for (;;) {
    if (L->failed.load(std::memory_order_relaxed)) return;
    unsigned long long b = L->next.fetch_add(1);
    if (b >= L->total) return;
    run_block(w, L, b);
  }
}

// --- the pool of helper OS threads ----------------------------------------------
struct Pool {
  std::mutex launch_mu;  // one launch at a time
  std::mutex mu;
  std::condition_variable wake, done;
  std::vector<std::thread> threads;
  Launch* current = nullptr;
  int wanted = 0, active = 0;

  void helper() {
    std::unique_lock<std::mutex> lk(mu);
    for (;;) {
      wake.wait(lk, [&] { return wanted > 0; });
      --wanted;
      ++active;
      Launch* L = current;
      lk.unlock();
      run_blocks(L);
      lk.lock();
      if (--active == 0) done.notify_all();
    }
  }

  void run(Launch* L, int helpers) {
    if (helpers > 0) {
      std::lock_guard<std::mutex> g(mu);
      while (static_cast<int>(threads.size()) < helpers) {
        threads.emplace_back([this] { helper(); });
        threads.back().detach();
      }
      current = L;
      wanted = helpers;
      wake.notify_all();
    }
    run_blocks(L);
    if (helpers > 0) {
      std::unique_lock<std::mutex> lk(mu);
      wanted = 0;  // helpers that have not started have nothing left to do
      done.wait(lk, [&] { return active == 0; });
      current = nullptr;
    }
  }
};

Pool& pool() {
  static Pool* p = new Pool;  // never destroyed: helpers outlive static destruction
  return *p;
}

}  // namespace

extern "C" {

int cupysim_run(const cupysim_launch_cfg* cfg, cupysim_body_fn body, void* args, char* err,
                size_t errlen) {
  Launch L;
  L.cfg = cfg;
  L.body = body;
  L.args = args;
  L.total = 1ull * cfg->grid[0] * cfg->grid[1] * cfg->grid[2];
  int helpers = 0;
#if !defined(CUPYSIM_SERIAL)
  unsigned long long extra = L.total - 1;
  helpers = cfg->workers - 1;
  if (static_cast<unsigned long long>(helpers) > extra) helpers = static_cast<int>(extra);
#endif
  Pool& p = pool();
  {
    std::lock_guard<std::mutex> g(p.launch_mu);
#if defined(CUPYSIM_ASAN)
    static std::once_flag registered;
    std::call_once(registered, [] { __asan_set_error_report_callback(&on_sanitizer_report); });
    g_sanitizer_report.store(false);
    // Bytes past the launch's dynamic shared memory are unaddressable.
    __asan_unpoison_memory_region(g_dynamic_smem, sizeof g_dynamic_smem);
    __asan_poison_memory_region(g_dynamic_smem + cfg->dynamic_smem,
                                sizeof g_dynamic_smem - cfg->dynamic_smem);
#endif
    p.run(&L, helpers);
  }
  if (L.code != CUPYSIM_OK && err && errlen) snprintf(err, errlen, "%s", L.message.c_str());
  return L.code;
}

void* cupysim_dynamic_shared(void) {
#if defined(CUPYSIM_SERIAL)
  return g_dynamic_smem;
#else
  return worker()->dynamic_smem;
#endif
}

int cupysim_syncthreads(int op, int pred, const char* file, int line) {
  Worker* w = tls_worker;
  Thread* t = current_thread();
  if (SANITIZER_REPORTED()) stop_after_report(w, t->fiber);
  if (w->bar_arrived == 0) {
    w->bar_op = op;
    w->bar_file = file;
    w->bar_line = line;
    w->bar_first = t->linear;
    w->bar_acc = op == 2 ? 1 : 0;
  } else if (__builtin_expect(w->bar_line != line || w->bar_op != op ||
                                  (w->bar_file != file && strcmp(w->bar_file, file) != 0),
                              0)) {
    fail_barrier(w, t, op, file, line);
  }
  if (op == 1) w->bar_acc += pred != 0;
  if (op == 2) w->bar_acc = w->bar_acc && pred;
  if (op == 3) w->bar_acc = w->bar_acc || pred;
  [[maybe_unused]] unsigned gen = w->bar_gen;
  TSAN_RELEASE(&w->tsan_bar[gen & 1]);
  if (++w->bar_arrived == w->n) {
    const int result = static_cast<int>(w->bar_acc);
    w->bar_arrived = 0;
    ++w->bar_gen;
    for (Thread* u : w->bar_waiters) {
      u->result = static_cast<uint64_t>(result);
      u->state = READY;
      enqueue(w, u->fiber);
    }
    w->bar_waiters.clear();
    TSAN_ACQUIRE(&w->tsan_bar[gen & 1]);
    return result;
  }
  t->state = AT_BARRIER;
  w->bar_waiters.push_back(t);
  block_current(w, t);
  TSAN_ACQUIRE(&w->tsan_bar[gen & 1]);
  return static_cast<int>(t->result);
}

static uint64_t reduce(int op, int is_signed, uint64_t a, uint64_t b) {
  const int32_t sa = static_cast<int32_t>(a), sb = static_cast<int32_t>(b);
  const uint32_t ua = static_cast<uint32_t>(a), ub = static_cast<uint32_t>(b);
  switch (op) {
    case CUPYSIM_WARP_REDUCE_ADD: return static_cast<uint32_t>(ua + ub);
    case CUPYSIM_WARP_REDUCE_MIN:
      return is_signed ? static_cast<uint32_t>(sa < sb ? sa : sb) : (ua < ub ? ua : ub);
    case CUPYSIM_WARP_REDUCE_MAX:
      return is_signed ? static_cast<uint32_t>(sa > sb ? sa : sb) : (ua > ub ? ua : ub);
    case CUPYSIM_WARP_REDUCE_AND: return ua & ub;
    case CUPYSIM_WARP_REDUCE_OR: return ua | ub;
    default: return ua ^ ub;
  }
}

// The lane a shuffle reads (CUDA C++ Programming Guide, "Warp Shuffle Functions"):
// within its width-segment, or its own value where the guide says so.
static long source_lane(int op, unsigned l, int arg, int width) {
  const unsigned seg = l & ~static_cast<unsigned>(width - 1);
  const unsigned in_seg = l & static_cast<unsigned>(width - 1);
  switch (op) {
    case CUPYSIM_WARP_SHFL_IDX:
      return seg + (static_cast<unsigned>(arg) & static_cast<unsigned>(width - 1));
    case CUPYSIM_WARP_SHFL_UP:
      return in_seg >= static_cast<unsigned>(arg) ? static_cast<long>(l) - arg : l;
    case CUPYSIM_WARP_SHFL_DOWN:
      return in_seg + static_cast<unsigned>(arg) < static_cast<unsigned>(width) ? l + arg : l;
    default: {
      const long src = l ^ static_cast<unsigned>(arg);
      return src >= static_cast<long>(seg + width) ? l : src;
    }
  }
}

// Every lane of the mask has posted its operand: compute each lane's result.
static void complete_warp_op(Worker* w, Thread* caller, WarpOp& op, int width) {
  Thread* lanes = &w->threads[caller->warp * 32];
  const unsigned mask = op.mask;
  uint64_t combined = 0;
  bool first = true;
  if (op.op == CUPYSIM_WARP_BALLOT || op.op == CUPYSIM_WARP_ANY || op.op == CUPYSIM_WARP_ALL) {
    for (unsigned l = 0; l < 32; ++l)
      if ((mask >> l & 1u) && lanes[l].post) combined |= 1ull << l;
  } else if (op.op >= CUPYSIM_WARP_REDUCE_ADD && op.op <= CUPYSIM_WARP_REDUCE_XOR) {
    for (unsigned l = 0; l < 32; ++l) {
      if (!(mask >> l & 1u)) continue;
      combined = first ? static_cast<uint32_t>(lanes[l].post)
                       : reduce(op.op, lanes[l].post_arg, combined, lanes[l].post);
      first = false;
    }
  }
  for (unsigned l = 0; l < 32; ++l) {
    if (!(mask >> l & 1u)) continue;
    Thread* u = &lanes[l];
    switch (op.op) {
      case CUPYSIM_WARP_BALLOT: u->result = combined; continue;
      case CUPYSIM_WARP_ANY: u->result = combined != 0; continue;
      case CUPYSIM_WARP_ALL: u->result = combined == mask; continue;
      case CUPYSIM_WARP_SYNC: u->result = 0; continue;
      case CUPYSIM_WARP_MATCH_ANY: {
        unsigned same = 0;
        for (unsigned k = 0; k < 32; ++k)
          if ((mask >> k & 1u) && lanes[k].post == u->post) same |= 1u << k;
        u->result = same;
        continue;
      }
      default:
        if (op.op > CUPYSIM_WARP_SHFL_XOR) {
          u->result = combined;
          continue;
        }
    }
    const long src = source_lane(op.op, l, u->post_arg, width);
    if (__builtin_expect(!(mask >> src & 1u), 0)) fail_source_lane(w, caller, op, l, src);
    u->result = lanes[src].post;
  }
}


static bool slot_free_slow(Worker* w, EagerWarp& ew, unsigned warp, unsigned long long k) {
  unsigned long long m = ~0ull;
  const Thread* lanes = &w->threads[warp * 32];
  for (unsigned l = 0; l < 32; ++l)
    if ((w->warp_lanes[warp] >> l & 1u) && lanes[l].done_ops < m) m = lanes[l].done_ops;
  ew.min_done = m;
  return m > k - kHistory;
}

static inline bool slot_free(Worker* w, EagerWarp& ew, unsigned warp, unsigned long long k) {
  return k < kHistory || ew.min_done > k - kHistory || slot_free_slow(w, ew, warp, k);
}

static inline void wake(Worker* w, Thread* u) {
  u->state = READY;
  u->wait_kind = WAIT_NONE;
  enqueue_front(w, u->fiber);
}

static void wait_for(Worker* w, Thread* t, unsigned char kind, unsigned long long k) {
  t->wait_kind = kind;
  t->wait_k = k;
  t->state = AT_WARP;
  block_current(w, t);
}

[[noreturn, gnu::cold, gnu::noinline]] static void fail_eager(Worker* w, Thread* t, const WarpSlot& s,
                                                     int opcode, int width, const char* file,
                                                     int line) {
  abort_block(w, t->fiber, CUPYSIM_FAULT,
              format("cupysim: lanes of warp %u in %s disagree at their warp operation #%llu: "
                     "lane %u calls %s(mask 0x%08x, width %d) (%s:%d), lane %u calls %s(mask "
                     "0x%08x, width %d) (%s:%d) (CUDA C++ Programming Guide, \"Warp Shuffle "
                     "Functions\")",
                     t->warp, w->where().c_str(), s.seq, s.first_lane, op_name(s.op), s.mask,
                     s.width, s.file, s.line, t->lane, op_name(opcode), s.mask, width, file,
                     line));
}

// A warp operation over every lane of the warp, run as dataflow: a lane posts its
// operand in the operation's slot and goes on as soon as what it reads is there
// (its shuffle source's operand; every operand for a vote, reduction or
// __syncwarp), instead of waiting for all 32 lanes at every shuffle. Lanes pair up
// by their count of such operations, which all lanes execute in the same order.
// A shuffle orders no memory, so letting a lane run ahead changes nothing a
// race-free kernel can observe.
static uint64_t eager_warp_op(Worker* w, Thread* t, int opcode, unsigned mask, uint64_t value, int arg,
                       int width, const char* file, int line) {
  const unsigned lane = t->lane, warp = t->warp;
  EagerWarp& ew = w->eager[warp];
  Thread* lanes = &w->threads[warp * 32];
  const unsigned long long k = t->posted_ops;
  WarpSlot& s = ew.slots[k % kHistory];
  while (!slot_free(w, ew, warp, k)) {
    ew.slot_waiters |= 1u << lane;
    wait_for(w, t, WAIT_SLOT, k);
  }
  if (s.epoch != w->epoch || s.seq != k) {
    s.epoch = w->epoch;
    s.seq = k;
    s.op = opcode;
    s.width = width;
    s.mask = mask;
    s.file = file;
    s.line = line;
    s.first_lane = lane;
    s.is_signed = arg;
    s.posted = s.waiting = 0;
  } else if (__builtin_expect(s.op != opcode || s.width != width, 0)) {
    fail_eager(w, t, s, opcode, width, file, line);
  }
  s.value[lane] = value;
  s.posted |= 1u << lane;
  t->posted_ops = k + 1;
  if (t->waiters) {
    for (unsigned ws = t->waiters; ws; ws &= ws - 1) {
      Thread* u = &lanes[__builtin_ctz(ws)];
      if (u->wait_k <= k) {
        t->waiters &= ~(1u << u->lane);
        wake(w, u);
      }
    }
  }
  uint64_t result = 0;
  if (opcode <= CUPYSIM_WARP_SHFL_XOR) {
    const long src = source_lane(opcode, lane, arg, width);
    if (src == static_cast<long>(lane)) {
      result = value;
    } else {
      if (__builtin_expect(!(mask >> src & 1u), 0)) {
        WarpOp op;
        op.op = opcode;
        op.mask = mask;
        op.file = file;
        op.line = line;
        fail_source_lane(w, t, op, lane, src);
      }
      Thread* from = &lanes[src];
      while (from->posted_ops <= k) {
        from->waiters |= 1u << lane;
        t->wait_src = static_cast<unsigned>(src);
        wait_for(w, t, WAIT_SOURCE, k);
      }
      result = s.value[src];
    }
  } else {
    if (opcode == CUPYSIM_WARP_SYNC) TSAN_RELEASE(&s.tsan_sync);
    if (s.posted != mask) {
      s.waiting |= 1u << lane;
      while (s.posted != mask) wait_for(w, t, WAIT_ALL, k);
    } else {
      for (unsigned ws = s.waiting; ws; ws &= ws - 1) wake(w, &lanes[__builtin_ctz(ws)]);
      s.waiting = 0;
    }
    if (opcode == CUPYSIM_WARP_SYNC) TSAN_ACQUIRE(&s.tsan_sync);
    uint64_t acc = 0;
    bool first = true;
    for (unsigned l = 0; l < 32; ++l) {
      if (!(mask >> l & 1u)) continue;
      const uint64_t v = s.value[l];
      switch (opcode) {
        case CUPYSIM_WARP_BALLOT:
        case CUPYSIM_WARP_ANY:
        case CUPYSIM_WARP_ALL:
          if (v) acc |= 1ull << l;
          break;
        case CUPYSIM_WARP_MATCH_ANY:
          if (v == value) acc |= 1ull << l;
          break;
        case CUPYSIM_WARP_SYNC: break;
        default:
          acc = first ? static_cast<uint32_t>(v) : reduce(opcode, s.is_signed, acc, v);
          first = false;
      }
    }
    result = opcode == CUPYSIM_WARP_ANY ? acc != 0 : opcode == CUPYSIM_WARP_ALL ? acc == mask : acc;
  }
  t->done_ops = k + 1;
  if (ew.slot_waiters) {
    for (unsigned ws = ew.slot_waiters; ws; ws &= ws - 1) {
      Thread* u = &lanes[__builtin_ctz(ws)];
      if (slot_free(w, ew, warp, u->wait_k)) {
        ew.slot_waiters &= ~(1u << u->lane);
        wake(w, u);
      }
    }
  }
  return result;
}

uint64_t cupysim_warp(int opcode, unsigned mask, uint64_t value, int arg, int width,
                      const char* file, int line) {
  Worker* w = tls_worker;
  Thread* t = current_thread();
  if (SANITIZER_REPORTED()) stop_after_report(w, t->fiber);
  const bool good_width = opcode > CUPYSIM_WARP_SHFL_XOR ||
                          (width >= 1 && width <= 32 && (width & (width - 1)) == 0);
  if (mask == w->warp_lanes[t->warp] && good_width) {
    return eager_warp_op(w, t, opcode, mask, value, arg, width, file, line);
  }
  const unsigned lane = t->lane;
  WarpOp& op = w->warps[t->warp];
  const bool bad_width =
      opcode <= CUPYSIM_WARP_SHFL_XOR && (width < 1 || width > 32 || (width & (width - 1)));
  if (__builtin_expect(!(mask >> lane & 1u) || (mask & ~w->warp_lanes[t->warp]) || bad_width ||
                           (op.arrived && (op.mask != mask || op.op != opcode)),
                       0)) {
    fail_warp(w, t, opcode, mask, width, file, line);
  }
  if (op.arrived == 0) {
    op.mask = mask;
    op.op = opcode;
    op.file = file;
    op.line = line;
    op.first_lane = lane;
  }
  t->post = value;
  t->post_arg = arg;
  op.arrived |= 1u << lane;
  if (opcode == CUPYSIM_WARP_SYNC) TSAN_RELEASE(&op.tsan_sync);
  if (op.arrived == mask) {
    complete_warp_op(w, t, op, width);
    op.arrived = 0;
    for (unsigned l = 32; l-- > 0;) {
      if (l == lane || !(mask >> l & 1u)) continue;
      Thread* u = &w->threads[t->warp * 32 + l];
      u->state = READY;
      enqueue_front(w, u->fiber);
    }
  } else {
    t->state = AT_WARP;
    block_current(w, t);
  }
  if (opcode == CUPYSIM_WARP_SYNC) TSAN_ACQUIRE(&op.tsan_sync);
  return t->result;
}

void cupysim_assert_fail(const char* expr, const char* file, int line, const char* func) {
  Worker* w = tls_worker;
  Thread* t = current_thread();
  // The message CUDA's device runtime prints for a failed assert().
  std::string msg = format("%s:%d: %s: block: [%u,%u,%u], thread: [%u,%u,%u] Assertion `%s` "
                           "failed.",
                           file, line, func, w->block.x, w->block.y, w->block.z,
                           t->view.thread_idx.x, t->view.thread_idx.y, t->view.thread_idx.z,
                           expr);
  fprintf(stderr, "%s\n", msg.c_str());
  abort_block(w, t->fiber, CUPYSIM_ASSERT, msg);
}

void cupysim_trap(const char* file, int line) {
  Worker* w = tls_worker;
  Thread* t = current_thread();
  abort_block(w, t->fiber, CUPYSIM_TRAP,
              format("__trap() in %s, %s (%s:%d)", w->where().c_str(), w->thread_text(t).c_str(),
                     file, line));
}

}  // extern "C"
