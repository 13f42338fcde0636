/* framework.h - how the training framework runs a layer: who launches its kernels, which kernels
 * it runs, and how it computes attention (a scenario's `framework:` section,
 * docs/compute-model.md).
 *
 *   launch:    none   - kernels are never waited for (the host is not simulated)
 *              eager  - the host launches every kernel, one by one, as PyTorch eager does; each
 *                       launch costs the host the device's launch_s
 *              graphs - each layer's forward and its backward are one CUDA graph each: one
 *                       launch (graph_launch_s) per graph, its kernels then run back to back
 *   kernels:   fused  - Megatron/Transformer Engine fused kernels (bias-dropout-add,
 *                       scale-mask-softmax, layer norm)
 *              eager  - PyTorch's unfused ops: separate scale, dropout and add kernels, and a
 *                       copy where attention transposes its output
 *   attention: core   - two batched GEMMs with the softmax between (an s x s tensor per head)
 *              flash  - one fused kernel forward and one backward (FlashAttention), no s x s
 *                       tensor in memory
 *   cuda_device_max_connections: the GPU's hardware work queues the streams share (CUDA's
 *              CUDA_DEVICE_MAX_CONNECTIONS, which Megatron-LM sets to 1 with sequence
 *              parallelism and TE's TP overlap): stream s uses queue s mod N, and a queue starts
 *              its kernels in launch order, so one waiting for its inputs holds back every kernel
 *              launched after it on that queue. 0 (unset): every stream a queue of its own.
 */
#ifndef MDL_FRAMEWORK_H
#define MDL_FRAMEWORK_H

enum mdl_launch { MDL_LAUNCH_NONE, MDL_LAUNCH_EAGER, MDL_LAUNCH_GRAPHS };
enum mdl_kernels { MDL_KERNELS_FUSED, MDL_KERNELS_EAGER };
enum mdl_attention { MDL_ATTENTION_CORE, MDL_ATTENTION_FLASH };

struct mdl_framework {
    enum mdl_launch launch;
    enum mdl_kernels kernels;
    enum mdl_attention attention;
    int connections; /* cuda_device_max_connections, 0 unset */
};

/* A scenario without a framework section: Megatron-LM as it runs by default (eager launches,
 * fused kernels, attention as batched GEMMs). A zeroed struct is the host-free model. */
void mdl_framework_default(struct mdl_framework *fw);

/* The values' names, NULL-terminated, in enum order (the scenario reader's choices). */
extern const char *const mdl_launch_names[];
extern const char *const mdl_kernels_names[];
extern const char *const mdl_attention_names[];

#endif
