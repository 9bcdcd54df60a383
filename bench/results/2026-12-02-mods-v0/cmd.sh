# build: c560af5 + the modifiers change (committed as c85adb9), `cargo build --release -p flashgen-cli`, carried as .carry/flashgen.xz
# call 1 (checks: every quick case incl. 16 modifier cases; memcheck over the modifier cases)
CHECK_ARGS="--quick" MMA_SYNC=0 PARITY=0 SANITIZE_RUNS="memcheck mods --skip-decode --forward-only;racecheck mods_mask_causal --skip-decode --forward-only" bash bench/device.sh checks sanitizers
# (racecheck_2 there matched no case: labels hold spaces; call 2 runs racecheck on three single-word filters)
# call 2
SANITIZE_RUNS="racecheck stripes --skip-decode --forward-only;racecheck docs --skip-decode --forward-only;racecheck alibi --skip-decode --forward-only" PASSES=2 BACKWARD=0 ANCHORS=0 FA4=0 BENCH_ARGS="--mods alibi,causal-mask" bash bench/device.sh sanitizers table
