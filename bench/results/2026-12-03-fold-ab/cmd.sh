# on the H200, build c9b801d (.carry/flashgen_fold.xz), one process per shape and round (.carry/perf_fold.sh):
# the default (bwd_fused_up folded wherever it fits) beside fold_key_blocks=off, backward only, do-bench timing
B=flashgen; OFF="fu:64,128,12,2@fold_key_blocks=off"
for r in 1 2; do
  $B bench --d 128 --n 1024,4096,16384 --causal 1 --backward --backward-only --timing do-bench --bwd-configs "$OFF" --json mha_$r.jsonl
  $B bench --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 1 --backward --backward-only --timing do-bench --bwd-configs "$OFF" --json gqa_$r.jsonl
  $B bench --varlen 0 --heads 16 --d 128 --causal 1 --backward --backward-only --timing do-bench --bwd-configs "$OFF" --json varlen_$r.jsonl
done
