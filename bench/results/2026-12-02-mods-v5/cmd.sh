# carried: .carry/flashgen.xz (the CLI), .carry/example04.xz (runtime/examples/04-modifiers, release)
xz -dc .carry/example04.xz > /tmp/ex04 && chmod +x /tmp/ex04 && (cd /tmp && FLASHGEN_CACHE_DIR=/tmp/ex-cache ./ex04 > $OUT/example04.txt 2>&1)
CHECK_ARGS="--quick --filter mods --skip-decode" MMA_SYNC=0 PARITY=0 SANITIZE_RUNS="memcheck band --skip-decode" PASSES=1 BACKWARD=1 ANCHORS=0 FA4=0 N=4096 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh checks sanitizers table
