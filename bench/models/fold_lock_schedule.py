# The folded grid's dQ lock schedule in lockstep ticks (one q-block step a tick, a hand-over visible `lat` ticks
# later), one head, MHA: the up order, the folded order (light up, then heavy up: the heavy halves meet each
# block together and wait in line), and heavy halves visiting down with a block's order by arrival (docs/DECISIONS.md).
#     python3 bench/models/fold_lock_schedule.py
# Against the GPU (2026-12-06-hdown): the heavy halves down with the order by arrival, built, lost 3-4.5% at GQA
# and 4-14% on the table's long causal rows; with a hand-over of two steps this model too gives them nothing
# (97 against 96), and it leaves out the memory: the up order's programs read each query block together.
# Key blocks of 128 (P), query blocks of 64 (2P). Each program advances one q-block step per tick when the
# block's lock shows its turn.


def ticks(seqs, turn, nq, lat):
    """Lockstep ticks until every program (a list of (key block, query block) steps) is done."""
    pos, lock, pending, t = [0] * len(seqs), [0] * nq, [], 0
    while any(pos[i] < len(s) for i, s in enumerate(seqs)):
        t += 1
        for due, b, v in [x for x in pending if x[0] <= t]:
            lock[b] = v
        pending = [x for x in pending if x[0] > t]
        for i, s in enumerate(seqs):
            if pos[i] >= len(s):
                continue
            kb, b = s[pos[i]]
            if lock[b] == turn(kb, b):
                pending.append((t + lat, b, turn(kb, b) + 1))
                pos[i] += 1
        if t > 100000:
            raise SystemExit("deadlock")
    return t


def folded(P):
    return [[P - 1 - x, x] if x < P - 1 - x else [P - 1 - x] for x in range((P + 1) // 2)]


def run(P, order, lat=1):
    nq, half = 2 * P, P // 2
    last_of = lambda b: min(b // 2, P - 1)
    if order == "up":
        progs, turn = [[kb] for kb in range(P)], lambda kb, b: last_of(b) - kb
    else:
        progs = folded(P)
        turn = lambda kb, b: (last_of(b) - kb) if kb >= half else kb + max(0, last_of(b) - half + 1)
    seqs = [[(kb, b) for kb in p for b in range(2 * kb, nq)] for p in progs]
    return ticks(seqs, turn, nq, lat), len(seqs)


def run_down(P, lat=1):
    nq = 2 * P
    seqs = []
    for p in folded(P):
        s = [(p[0], b) for b in range(2 * p[0], nq)]
        if len(p) > 1:
            s += [(p[1], b) for b in range(nq - 1, 2 * p[1] - 1, -1)]
        seqs.append(s)
    # ideal arrival step of each (kb, b): its position in its program's steps; a block's turns by arrival
    arr = {step: j for s in seqs for j, step in enumerate(s)}
    ranks = {}
    for b in range(nq):
        contrib = sorted((a, kb) for (kb, bb), a in arr.items() if bb == b)
        assert len({a for a, _ in contrib}) == len(contrib), ("tie", b, contrib)
        for r, (_, kb) in enumerate(contrib):
            ranks[(kb, b)] = r
    return ticks(seqs, lambda kb, b: ranks[(kb, b)], nq, lat)


for P in (8, 32, 128):
    for lat in (1, 2):
        (tu, nu), (tf, nf) = run(P, "up", lat), run(P, "fold", lat)
        print(f"P {P:3} lat {lat}: up {tu} ticks for {nu} programs (max work {2*P}); fold {tf} ticks, {nf} programs (work {2*P+2}); fold's extra ticks over its work {tf-(2*P+2)}")
for P in (8, 32, 128):
    for lat in (1, 2):
        print(f"P {P:3} lat {lat}: fold with heavy halves down, order by arrival: {run_down(P, lat)} ticks (work {2*P+2})")
