# device call 1 of 2026-12-02 (fourth session), build cca7b2d:
flashgen bench --heads 64 --kv-heads 8 --batch 1 --d 128 --n 4096,16384 --causal 1 --backward --backward-only --fused --timing do-bench --json gqa_fused.jsonl
