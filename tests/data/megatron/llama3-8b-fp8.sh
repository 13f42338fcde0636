#!/bin/bash
# Test fixture: the flags of Megatron-LM's examples/llama/train_llama3_8b_h100_fp8.sh (Llama 3
# 8B on one 8-GPU H100 machine, FP8 hybrid, distributed optimizer), in the example's style:
# variables with defaults, conditional flag arrays, quoted multi-flag strings.
TOKENIZER_ARG=${3:-"MOCK"}
GPUS_PER_NODE=8
NUM_NODES=1
TP_SIZE=1
CP_SIZE=1
MICRO_BATCH_SIZE=1
GLOBAL_BATCH_SIZE=128
NUM_LAYERS=32
DTYPE="fp8"
SEQ_LENGTH=8192
PRETRAIN_SCRIPT_PATH="pretrain_gpt.py"

DISTRIBUTED_ARGS=(--nproc_per_node $GPUS_PER_NODE --nnodes $NUM_NODES)
MODEL_ARGS=(
    --use-mcore-models
    --num-layers $NUM_LAYERS
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --kv-channels 128
    --seq-length $SEQ_LENGTH
    --max-position-embeddings $SEQ_LENGTH
    --position-embedding-type rope
    --swiglu
    --untie-embeddings-and-output-weights
    --disable-bias-linear
)
TRAINING_ARGS=(
    --micro-batch-size $MICRO_BATCH_SIZE
    --global-batch-size $GLOBAL_BATCH_SIZE
    --train-samples 1953125000
    --lr 0.00015
    --bf16
    --grad-reduce-in-bf16
    --cross-entropy-loss-fusion
)
DTYPE_ARGS=()
if [[ "$DTYPE" == "fp8" ]]; then
    DTYPE_ARGS+=(
        "--fp8-format hybrid"
        "--fp8-amax-history-len 1024"
        "--fp8-amax-compute-algo max"
        "--fp8-param-gather"
    )
fi
MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP_SIZE
    --context-parallel-size $CP_SIZE
    --sequence-parallel
)
DDP_ARGS=(--use-distributed-optimizer --overlap-grad-reduce --overlap-param-gather)
TRAINING_ARGS+=("${DDP_ARGS[@]}")
if [[ "$TOKENIZER_ARG" == "MOCK" ]] || [[ -z "$TOKENIZER_ARG" ]]; then
    DATA_ARGS=("--mock-data" "--tokenizer-type NullTokenizer" "--vocab-size 128256")
else
    DATA_ARGS=("--tokenizer-type HuggingFaceTokenizer" "--tokenizer-model $TOKENIZER_ARG")
fi
if [ ! -f "$PRETRAIN_SCRIPT_PATH" ]; then
    echo "Error: pretrain_gpt.py not found"
    exit 1
fi
torchrun ${DISTRIBUTED_ARGS[@]} \
    "$PRETRAIN_SCRIPT_PATH" \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${DTYPE_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    --log-interval 1 --log-throughput
