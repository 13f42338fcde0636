#!/bin/bash
# Test fixture: a Llama 2 launch in the style of Megatron-LM's examples/llama/train_llama2.sh
# (flags in strings built up by conditionals, the command run by eval): Llama 2 70B (80 layers,
# width 8192, 64 heads, 8 key/value groups, FFN 28672), TP 8, PP 4 interleaved, on 4 nodes.
NNODES="${NNODES:-4}"
GPUS_PER_NODE=8
MODEL_SIZE="${MODEL_SIZE:-70}"
TP="${TP:-8}"
PP="${PP:-4}"
MBS="${MBS:-1}"
BS="${BS:-64}"
SEQ_LENGTH="${SEQ_LENGTH:-4096}"
RECOMPUTE="${RECOMPUTE:-0}"
FSDP="${FSDP:-0}"
TE_FP8="${TE_FP8:-0}"
if [[ $MODEL_SIZE -eq 7 ]]; then
    HIDDEN_SIZE=4096; FFN_HIDDEN_SIZE=11008; NUM_LAYERS=32; NUM_HEADS=32; NUM_KV_HEADS=32
elif [[ $MODEL_SIZE -eq 70 ]]; then
    HIDDEN_SIZE=8192
    FFN_HIDDEN_SIZE=28672
    NUM_LAYERS=80
    NUM_HEADS=64
    NUM_KV_HEADS=8
else
    echo "Model size not supported."
    exit 1
fi
if [ "$FSDP" -eq 1 ] && [ "$TP" -gt 1 ]; then
    TP=1
fi
GROUP_SIZE=$(( ${NUM_HEADS} / ${NUM_KV_HEADS} ))
NUM_GROUPS=$(( ${NUM_HEADS} / ${GROUP_SIZE} ))
GPT_ARGS="
    --tensor-model-parallel-size ${TP} \
    --pipeline-model-parallel-size ${PP} \
    --num-layers-per-virtual-pipeline-stage 5 \
    --num-layers $NUM_LAYERS \
    --hidden-size $HIDDEN_SIZE \
    --ffn-hidden-size $FFN_HIDDEN_SIZE \
    --num-attention-heads $NUM_HEADS \
    --seq-length $SEQ_LENGTH \
    --untie-embeddings-and-output-weights \
    --swiglu \
    --normalization RMSNorm \
    --micro-batch-size $MBS \
    --global-batch-size $BS \
    --train-iters 12 \
    --bf16 \
"
if [ "$RECOMPUTE" -eq 1 ]; then
    GPT_ARGS="$GPT_ARGS --recompute-granularity full --recompute-method block"
fi
EXTRA_ARGS="--group-query-attention --num-query-groups $NUM_GROUPS --overlap-grad-reduce"
if [ "$FSDP" -eq 1 ]; then
    EXTRA_ARGS="$EXTRA_ARGS --use-torch-fsdp2"
else
    EXTRA_ARGS="$EXTRA_ARGS --use-distributed-optimizer --overlap-param-gather --sequence-parallel"
fi
if [ "$TE_FP8" -eq 1 ]; then
    EXTRA_ARGS="$EXTRA_ARGS --fp8-format=hybrid --fp8-amax-history-len=1024"
fi
DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank 0"
run_cmd="torchrun $DISTRIBUTED_ARGS pretrain_gpt.py $GPT_ARGS $EXTRA_ARGS --tokenizer-type HuggingFaceTokenizer --tokenizer-model NousResearch/Llama-2-7b-chat-hf"
eval $run_cmd |& tee train.log
