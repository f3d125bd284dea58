HERE="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"
source "${HERE}/tiny-moe.sh"
for ((i = 0; i < ${#MODEL_ARGS[@]}; i++)); do
  case "${MODEL_ARGS[$i]}" in
    --num-layers) MODEL_ARGS[$((i + 1))]=2 ;;
    --moe-layer-freq) MODEL_ARGS[$((i + 1))]="[0]*1+[1]*1" ;;
  esac
done
