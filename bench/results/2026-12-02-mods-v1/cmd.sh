# bench_floatidx_rows.jsonl: the build with the indices as floats (one conversion per block) and mask_mod
# tiles launched longest first, before `contract` (device call 3):
PASSES=1 BACKWARD=0 ANCHORS=0 FA4=0 N=4096,16384 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh table
# rows.jsonl / summary.txt: the backward with modifiers, `contract` on the modifiers' float ops (device call 4):
CHECK_ARGS="--quick --filter mods --skip-decode" MMA_SYNC=0 PARITY=0 SANITIZE_RUNS="memcheck mods --skip-decode;racecheck stripes --skip-decode;racecheck docs --skip-decode" PASSES=1 BACKWARD=0 ANCHORS=0 FA4=0 N=4096,16384 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh checks sanitizers table
