MODEL_ARGS=(--num-layers 4 --num-experts 8 --moe-layer-freq "[0]*1+[1]*3" --hidden-size 64)
