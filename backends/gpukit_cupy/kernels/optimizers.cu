// Fused in-place optimizer steps with torch.optim semantics, one pass each.
#include "gk_common.cuh"

// torch.optim.SGD. MOMENTUM=false ignores buf. damp1 = 1 - dampening.
template <typename T, bool MOMENTUM>
__global__ void sgd_update(T* __restrict__ param, const T* __restrict__ grad, T* buf, gk_index n,
                           T lr, T momentum, T damp1, T weight_decay, int nesterov,
                           int first_step) {
  GK_GRID_STRIDE(i, n) {
    const T p = param[i];
    T d = grad[i];
    if (weight_decay != T(0)) d += weight_decay * p;
    if (MOMENTUM) {
      const T b = first_step ? d : momentum * buf[i] + damp1 * d;
      buf[i] = b;
      d = nesterov ? d + momentum * b : b;
    }
    param[i] = p - lr * d;
  }
}

// torch.optim.Adam / AdamW. l2: weight decay added to the gradient (Adam), 0 for
// AdamW; decay: 1 - lr * weight_decay (AdamW), 1 for Adam. step_size = lr / (1 -
// beta1^t), bc2_sqrt = sqrt(1 - beta2^t); omb1 = 1 - beta1, omb2 = 1 - beta2.
template <typename T>
__global__ void adam_update(T* __restrict__ param, const T* __restrict__ grad,
                            T* __restrict__ exp_avg, T* __restrict__ exp_avg_sq, gk_index n,
                            T omb1, T beta2, T omb2, T eps, T l2, T decay, T step_size,
                            T bc2_sqrt) {
  GK_GRID_STRIDE(i, n) {
    T p = param[i];
    T g = grad[i];
    if (l2 != T(0)) g += l2 * p;
    p *= decay;
    const T m0 = exp_avg[i];
    const T m = m0 + omb1 * (g - m0);  // lerp, as torch does
    const T v = beta2 * exp_avg_sq[i] + omb2 * (g * g);
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    param[i] = p - step_size * (m / (gk_sqrt(v) / bc2_sqrt + eps));
  }
}
