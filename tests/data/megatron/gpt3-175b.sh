#!/bin/bash
# Test fixture: the flags of Megatron-LM's examples/gpt3/train_gpt3_175b_distributed.sh
# (GPT-3 175B, TP 8 x PP 16, global batch 1,536, fp16), in the example's array style.
# Paths are placeholders; tests/cli/test_user.c imports it with --gpus 1024.
GPUS_PER_NODE=8
NUM_NODES=1
WORLD_SIZE=$(($GPUS_PER_NODE*$NUM_NODES))
CHECKPOINT_PATH=$1
VOCAB_FILE=$3 #<path>/gpt2-vocab.json
DATA_PATH=$5

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr localhost --master_port 6000
)
GPT_MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --attention-backend auto # flash/fused/unfused/local
)
TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 1536
    --rampup-batch-size 16 16 5859375
    --train-iters 500000
    --weight-decay 0.1 --adam-beta1 0.9 --adam-beta2 0.95
    --init-method-std 0.006 --clip-grad 1.0
    --fp16
    --lr 6.0e-5 --lr-decay-style cosine --min-lr 6.0e-6
    --lr-warmup-fraction .001 --lr-decay-iters 430000
)
MODEL_PARALLEL_ARGS=(
	--tensor-model-parallel-size 8
	--pipeline-model-parallel-size 16
)
DATA_ARGS=(
    --data-path $DATA_PATH
    --vocab-file ${VOCAB_FILE:-gpt2-vocab.json}
    --merge-file gpt2-merges.txt
    --split 949,50,1
)
torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${GPT_MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]} \
    --log-interval 100 --save $CHECKPOINT_PATH --eval-iters 10
