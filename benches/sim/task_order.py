"""Issue 40: which order a polled sequential test may read tasks in.

A stand-alone simulation (Python 3, standard library only) of the orders
benches/README.md compares ("Issue 40: the name sweep"): a pool of W=10
workers, T=400 tasks, a job that finishes sooner Exp(1) and the other
Exp(4) ("0ff": failures first at the null; "Dpf": passes first at the
design effect 0.4 vs 0.6), scores recorded as jobs complete and the test
asked after every 10. The test is Wald's SPRT on discordant pairs
(theta 0.5 vs 0.692, alpha 0.05, beta 0.10) read along each order's path,
stopping at its first crossing -- not ratchet's betting test, whose rates
through the library are measured by crates/gate/tests/it/order_40.rs.

Orders: decl (the submission order, as a declared list), trace (the
baseline's trace order, laws 2-4), first (first seen on either side),
hashu (a hash order re-sorted at every look), sweep (the name sweep of
crates/gate/src/order.rs; KEY=hash sorts by a hash of the name instead,
SEEN=base sees a task only at the baseline's score).

Arrivals: conc (one pool runs both sides), basefirst (the baseline's run
in its own pool, recorded before the candidate's), candfirst (the other
way round), baseseq (the baseline's pooled run, then the candidate one
task at a time in submission order).

Usage: python3 task_order.py RUNS ARRIVALS ORDER...
e.g.   python3 task_order.py 400 conc,basefirst trace sweep
"""
import random, math, hashlib, sys, bisect
W=10; SLOW=4.0; T=400; BATCH=10
def pool(jobs):
    free=[0.0]*W; ends=[]
    for i,(j,d) in enumerate(jobs):
        w=min(range(W),key=lambda k:free[k]); free[w]+=d; ends.append((free[w],i,j))
    ends.sort(); return [j for _,_,j in ends]
def mkjobs(rng,pb,pc,ff,sides=(0,1)):
    jobs=[]
    for t in range(T):
        for side in sides:
            p=pc if side else pb
            x=1 if rng.random()<p else 0
            slow=(x==1)==ff
            d=rng.expovariate(1.0/(SLOW if slow else 1.0))
            jobs.append(((t,side,x),d))
    return jobs
def arrival(kind,rng,pb,pc,ff):
    if kind=='conc': return pool(mkjobs(rng,pb,pc,ff))
    if kind=='basefirst':
        b=pool(mkjobs(rng,pb,pc,ff,(0,))); c=pool(mkjobs(rng,pb,pc,ff,(1,))); return b+c
    if kind=='candfirst':
        b=pool(mkjobs(rng,pb,pc,ff,(0,))); c=pool(mkjobs(rng,pb,pc,ff,(1,))); return c+b
    if kind=='baseseq':  # baseline done first (any order), candidate sequential in id order
        b=pool(mkjobs(rng,pb,pc,ff,(0,))); c=[(t,1,1 if rng.random()<pc else 0) for t in range(T)]; return b+c
HS=[hashlib.sha256(b"k%d"%t).digest() for t in range(T)]
q1=0.36/0.52
LA=math.log(18); LB=math.log(0.1/0.95)
def walk(pairs):
    s=0.0
    for b,c in pairs:
        if b!=c:
            s+= math.log(q1/0.5) if c>b else math.log((1-q1)/0.5)
            if s>=LA: return 'P'
            if s<=LB: return 'R'
    return None
class Sweeps:
    def __init__(s): s.sweeps=[]; s.path=[]; s.inpath=set()
    def see(s,t):
        h=KEY(t)
        for sw in s.sweeps:
            if h>sw['ptr']: bisect.insort(sw['m'],(h,t)); return
        s.sweeps.append({'ptr':PTR0,'m':[(h,t)]})
    def advance(s,complete):
        # Sweeps are read in the order they began: one waiting holds back the rest.
        for sw in s.sweeps:
            m=sw['m']
            while m and complete(m[0][1]):
                h,t=m.pop(0); sw['ptr']=h; s.path.append(t)
            if m: return
def run(order,kind,rng,pb,pc,ff):
    ev=arrival(kind,rng,pb,pc,ff)
    base={};cand={};bseq=[];first=[];seen=set();sw=Sweeps();swseen=set()
    comp=lambda t: t in base and t in cand
    for k in range(0,len(ev),BATCH):
        for (t,side,x) in ev[k:k+BATCH]:
            (cand if side else base)[t]=x
            if side==0: bseq.append(t)
            if t not in seen:
                seen.add(t); first.append(t)
            if t not in swseen and (side==0 or not BASEONLY):
                swseen.add(t); sw.see(t)
            sw.advance(comp)
        if order=='sweep':
            pairs=[(base[t],cand[t]) for t in sw.path]
        else:
            if order=='trace': seq=bseq
            elif order=='hashu': seq=sorted(seen,key=lambda t:HS[t])
            elif order=='first': seq=first
            elif order=='decl': seq=range(T)
            pairs=[]
            for t in seq:
                if comp(t): pairs.append((base[t],cand[t]))
                else: break
        r=walk(pairs)
        if r: return r,len(cand)
    return 'C',len(cand)
R=int(sys.argv[1]); kinds=sys.argv[2].split(',')
import os
KEY=(lambda t:HS[t]) if os.environ.get('KEY')=='hash' else (lambda t:t)  # names t0..t399 in submission order
PTR0=b'' if os.environ.get('KEY')=='hash' else -1
BASEONLY=os.environ.get('SEEN')=='base'
for kind in kinds:
  for order in sys.argv[3:]:
    out=[]
    for (pb,pc,ff,lab) in ((0.5,0.5,True,'0ff'),(0.5,0.5,False,'0pf'),(0.4,0.6,False,'Dpf'),(0.4,0.6,True,'Dff')):
        rng=random.Random(1)
        res=[run(order,kind,rng,pb,pc,ff) for _ in range(R)]
        P=sum(r=='P' for r,_ in res)/R; Rj=sum(r=='R' for r,_ in res)/R; asn=sum(n for _,n in res)/R
        bad = P if lab[0]=='0' else Rj
        out.append(f"{lab} err {bad:.3f} n {asn:.0f}")
    print(f"{kind:9} {order:6} "+" | ".join(out),flush=True)
