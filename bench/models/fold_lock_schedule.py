# The folded grid's dQ lock schedule in lockstep ticks (one q-block step a tick, a hand-over visible `lat` ticks
# later), one head, MHA: the up order, the folded order (light up, then heavy up: the heavy halves meet each
# block together and wait in line), and heavy halves visiting down with a block's order by arrival (docs/DECISIONS.md).
# python3 bench/models/fold_lock_schedule.py
# one head, MHA: key blocks of 128 (P), query blocks of 64 (2P). Each program advances one q-block step per tick
# when the block's lock shows its ticket; a hand-over becomes visible `lat` ticks later. Count ticks.
def run(P, order, lat=1):
    nq=2*P; half=P//2
    last_of=lambda b: min(b//2, P-1)
    first=lambda kb: 2*kb
    if order=='up':
        progs=[[kb] for kb in range(P)]
        ticket=lambda kb,L: L-kb
    else:
        progs=[[P-1-x,x] if x<P-1-x else [P-1-x] for x in range((P+1)//2)]
        ticket=lambda kb,L: (L-kb) if kb>=half else kb+max(0,L-half+1)
    seqs=[[(kb,b) for kb in p for b in range(first(kb),nq)] for p in progs]
    pos=[0]*len(seqs); lock=[0]*nq; pending=[]; t=0; busy=0
    while any(pos[i]<len(s) for i,s in enumerate(seqs)):
        t+=1
        # apply hand-overs due
        for (due,b,v) in [x for x in pending if x[0]<=t]: lock[b]=v
        pending=[x for x in pending if x[0]>t]
        for i,s in enumerate(seqs):
            if pos[i]>=len(s): continue
            kb,b=s[pos[i]]
            tk=ticket(kb,last_of(b))
            if lock[b]==tk:
                pending.append((t+lat,b,tk+1)); pos[i]+=1; busy+=1
        if t>100000: raise SystemExit("deadlock")
    return t, busy, len(seqs)
for P in (8,32,128):
    for lat in (1,2):
        tu,bu,nu=run(P,'up',lat); tf,bf,nf=run(P,'fold',lat)
        print(f"P {P:3} lat {lat}: up {tu} ticks for {nu} programs (max work {2*P}); fold {tf} ticks, {nf} programs (work {2*P+2}); fold's extra ticks over its work {tf-(2*P+2)}")
def run_down(P, lat=1):
    nq=2*P; half=P//2
    last_of=lambda b: min(b//2, P-1)
    progs=[[P-1-x,x] if x<P-1-x else [P-1-x] for x in range((P+1)//2)]
    seqs=[]
    for p in progs:
        s=[(p[0],b) for b in range(2*p[0],nq)]
        if len(p)>1: s+=[(p[1],b) for b in range(nq-1,2*p[1]-1,-1)]
        seqs.append(s)
    # ideal arrival step of each (kb, b): position in its program's sequence; rank per block by arrival
    arr={}
    for s in seqs:
        for j,(kb,b) in enumerate(s): arr[(kb,b)]=j
    ranks={}
    for b in range(nq):
        contrib=sorted([(arr[(kb,bb)],kb) for (kb,bb) in arr if bb==b])
        assert len(set(a for a,_ in contrib))==len(contrib), ("tie",b,contrib)
        for r,(a,kb) in enumerate(contrib): ranks[(kb,b)]=r
    pos=[0]*len(seqs); lock=[0]*nq; pending=[]; t=0
    while any(pos[i]<len(s) for i,s in enumerate(seqs)):
        t+=1
        for (due,b,v) in [x for x in pending if x[0]<=t]: lock[b]=v
        pending=[x for x in pending if x[0]>t]
        for i,s in enumerate(seqs):
            if pos[i]>=len(s): continue
            kb,b=s[pos[i]]
            if lock[b]==ranks[(kb,b)]:
                pending.append((t+lat,b,ranks[(kb,b)]+1)); pos[i]+=1
        if t>100000: raise SystemExit("deadlock")
    return t
for P in (8,32,128):
    for lat in (1,2):
        print(f"P {P:3} lat {lat}: fold with heavy halves down, order by arrival: {run_down(P,lat)} ticks (work {2*P+2})")
