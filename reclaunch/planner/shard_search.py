"""The sharding search: many starts, then bounded local improvement (issue 21, item 4).

    seeds      TorchRec's heuristics (data-parallel for tiny tables, table-wise while a table
               fits one GPU, row-wise beyond), its greedy proposer (each table's cheapest
               option) and uniform proposer (every table one type), and the cheapest plan
               within every subset of sharding types (each type in use costs collectives)
    descend    from the best few starts, first-improvement moves until none helps:
                 swap      one table to another of its options (re-placed, or inserted into
                           the current placement)
                 drop      every table of one sharding type to its best other option
                 move      a shard off the slowest rank to a lighter one
                 exchange  a shard of the slowest rank with a lighter one elsewhere
               bounded by planner.yaml sharding.search (rounds and candidates per round)

Everything is rated by sharding.evaluate (the cost model's own step), so the search stays
right whatever the cost terms become. Pure; no torch.
"""

from __future__ import annotations

from functools import lru_cache
from itertools import combinations

from reclaunch.planner.constants import constants
from reclaunch.planner.shard_cost import Ctx, Option
from reclaunch.planner.sharding import KINDS, Eval, StepCtx, TableIn, evaluate, quick, table_options


def _bounds() -> dict:
    return constants()["sharding"]["search"]


def _cheapest(opts: list[Option], W: int, kinds=None) -> Option | None:
    same = [o for o in opts if kinds is None or o.kind in kinds]
    return min(same, key=lambda o: o.work(W)) if same else None


def seeds(ctx: Ctx, per_table: list[list[Option]]) -> tuple[list[list[Option]], dict[str, list[Option]]]:
    """-> (distinct starting plans, {kind: the all-one-kind plan} for the kinds every table has)."""
    W = ctx.world
    out: list[list[Option]] = []
    seen: set[tuple[int, ...]] = set()

    def add(plan):
        # Options are distinct objects per table (options() makes one per type and shard
        # count), so a plan is known by its options' ids: no field-by-field comparisons.
        key = tuple(map(id, plan))
        if key not in seen:
            seen.add(key)
            out.append(plan)

    work = {id(o): o.work(W) for opts in per_table for o in opts}   # each option's, once
    # each table's cheapest option of each kind (by rank-seconds, TorchRec's proposer order)
    by_kind = [{} for _ in per_table]
    for best, opts in zip(by_kind, per_table):
        for o in opts:
            if o.kind not in best or work[id(o)] < work[id(best[o.kind])]:
                best[o.kind] = o
    greedy = [min(b.values(), key=lambda o: work[id(o)]) for b in by_kind]
    add(greedy)
    # Balanced: the cheapest option whose shard is no heavier than an even share of the
    # cluster's work, so a hot table is split and a tiny one stays cheap.
    share = sum(o.work(W) for o in greedy) / W
    add([_cheapest([o for o in opts if o.piece_s + o.dp_opt_s <= share], W)
         or min(opts, key=lambda o: o.piece_s + o.dp_opt_s) for opts in per_table])
    add([_heuristic(ctx, opts) for opts in per_table])
    kinds = [k for k in KINDS if any(k in b for b in by_kind)]
    uniform = {k: [b[k] for b in by_kind] for k in kinds if all(k in b for b in by_kind)}
    for plan in uniform.values():
        add(plan)
    # The cheapest plan within each subset of kinds: every kind in use adds its collectives.
    # Each table's options cheapest first, equal ones in `kinds` order (the order min() met
    # them in a subset): a subset's pick is its first in that list, else the greedy one (the
    # cheapest of all, when the table has none of the subset's kinds).
    pos = {k: i for i, k in enumerate(kinds)}
    ranked = [[o for _, o in sorted(b.items(), key=lambda kv: (work[id(kv[1])], pos.get(kv[0], len(pos))))]
              for b in by_kind]
    for n in range(1, len(kinds)):
        for subset in combinations(kinds, n):
            plan = []
            for opts, g in zip(ranked, greedy):
                for o in opts:
                    if o.kind in subset:
                        break
                else:
                    o = g
                plan.append(o)
            add(plan)
    return out, uniform


def _heuristic(ctx: Ctx, opts: list[Option]) -> Option:
    """TorchRec's rules of thumb for one table: replicate it while that is the cheapest,
    keep it whole on one rank while it fits, split rows once it does not."""
    W = ctx.world
    by = {o.kind: o for o in sorted(opts, key=lambda o: -o.work(W))}
    dp, tw = by.get("data_parallel"), by.get("table_wise")
    best = _cheapest(opts, W)
    if dp is not None and dp is best:
        return dp
    if tw is not None and tw.mem <= ctx.budget:
        return tw
    for kind in ("row_wise", "table_row_wise", "column_wise"):
        if kind in by:
            return by[kind]
    return min(opts, key=lambda o: o.mem)


def search(ctx: Ctx, sc: StepCtx, tables: list[TableIn], pin_all: str | None = None):
    """-> (chosen options, its Eval, {uniform kind: Eval}) minimising (overflow, step).

    Cached: `compare` plans the same model on the same GPU and fabric in many regions."""
    return _search(ctx, sc, tuple(tables), pin_all)


@lru_cache(maxsize=256)
def _search(ctx: Ctx, sc: StepCtx, tables: tuple[TableIn, ...], pin_all: str | None):
    per_table = table_options(ctx, list(tables), pin_all)
    starts, uniform = seeds(ctx, per_table)
    rate = _rater(ctx, sc)
    evals = [(rate(s), s) for s in starts]
    by_plan = {tuple(map(id, x[1])): x for x in evals}
    uniform_ev = {k: by_plan[tuple(map(id, p))][0] for k, p in uniform.items()}
    # Descend from the best few starts and from TorchRec's rules of thumb  however
    # it rates: that start is what TorchRec's own planner tends to end near.
    rule = [_heuristic(ctx, opts) for opts in per_table]
    heuristic = by_plan[tuple(map(id, rule))]
    evals.sort(key=lambda x: x[0].key)
    picked = evals[:_bounds()["starts"]]
    if all(s is not heuristic[1] for _, s in picked):
        picked.append(heuristic)
    ends: dict[int, tuple[int, tuple]] = {}
    results = [descend(ctx, sc, per_table, list(s), e, rate, ends) for e, s in picked]
    best, best_ev = min(results, key=lambda x: x[1].key)
    return best, best_ev, uniform_ev


def _rater(ctx: Ctx, sc: StepCtx):
    """sharding.evaluate with the answers of this search remembered: the descents from
    different starts meet in the same plans (evaluate is pure; an Eval is never changed), so
    equal plans get the very same Eval, which is how descend recognises a plan it has seen."""
    memo: dict[tuple, Eval] = {}

    def rate(opts: list[Option], fixed: dict[int, list[int]] | None = None) -> Eval:
        # fixed's order is kept in the key: _place adds the fixed shards in that order
        key = (tuple(map(id, opts)),
               tuple((i, tuple(rs)) for i, rs in fixed.items()) if fixed else None)
        ev = memo.get(key)
        if ev is None:
            ev = memo[key] = evaluate(ctx, sc, opts, fixed)
        return ev
    return rate


def _better(e: Eval, ev: Eval) -> bool:
    """Strictly better by a margin (no cycling on rounding): a shorter step, or the same step
    (the host bounds both) with a shorter GPU path."""
    if e.overflow < ev.overflow - 1.0:
        return True
    if e.overflow > ev.overflow:
        return False
    if e.total < ev.total * (1 - 1e-6):
        return True
    return e.total <= ev.total * (1 + 1e-9) and e.device < ev.device * (1 - 1e-6)


def _fixed(cur: list[Option], ev: Eval, skip: int | None = None) -> dict[int, list[int]]:
    return {i: list(ev.ranks[i]) for i, o in enumerate(cur) if i != skip and o.scope != "all"}


def descend(ctx: Ctx, sc: StepCtx, per_table, cur: list[Option], ev: Eval, rate=None,
            ends: dict | None = None):
    """First-improvement moves from (cur, ev) until none helps or the rounds run out.
    `rate`: _rater's evaluate; `ends`: id(Eval) -> (moves to the end, (plan, Eval)) of the
    earlier descents of the same search. The moves are deterministic, so a descent that
    reaches a plan an earlier one went through ends where that one did, once as many rounds
    are left as it took from there."""
    b = _bounds()
    rate = rate or (lambda opts, fixed=None: evaluate(ctx, sc, opts, fixed))
    rounds = b["rounds"]
    path = []
    for k in range(rounds):
        hit = ends.get(id(ev)) if ends is not None else None
        if hit is not None and hit[0] <= rounds - k:
            cur, ev = hit[1]
            break
        path.append(ev)
        step = (_swap(ctx, sc, per_table, cur, ev, b["tables_per_round"], rate)
                or _drop(ctx, sc, per_table, cur, ev, rate)
                or _move(ctx, sc, cur, ev, b["targets_per_shard"], rate))
        if step is None:
            if ends is not None:         # a settled end: every plan on the way leads here
                for d, e in enumerate(reversed(path)):
                    ends[id(e)] = (d, (cur, ev))
            break
        cur, ev = step
    return cur, ev


def _swap(ctx, sc, per_table, cur, ev, width: int, rate):
    crit = ev.critical
    # Tables that load the slowest rank, the heaviest first; data-parallel and row-wise
    # tables load every rank (and the all-reduce), so they are always candidates.
    cands = [i for i, o in enumerate(cur) if crit in ev.ranks[i] or o.scope == "all"]
    cands.sort(key=lambda i: -(cur[i].piece_s + cur[i].dp_opt_s + cur[i].dp_bytes / 1e11))
    for i in cands[:width]:
        best = None
        for alt in per_table[i]:
            if alt is cur[i]:
                continue
            if ev.overflow <= 0:
                total, device = quick(ctx, sc, cur, ev, i, alt)
                if total >= ev.total * (1 - 1e-6) and not (
                        total <= ev.total * (1 + 1e-9) and device < ev.device * (1 - 1e-6)):
                    continue
            trial = cur[:i] + [alt] + cur[i + 1:]
            # inserted into the current placement first; re-placing everything if that fails
            e = rate(trial, _fixed(cur, ev, i))
            if not _better(e, ev):
                e = rate(trial)
            if _better(e, ev) and (best is None or e.key < best[0].key):
                best = (e, trial)
        if best is not None:
            return best[1], best[0]
    return None


def _drop(ctx, sc, per_table, cur, ev, rate):
    """Retire one sharding type (its collectives' latency) by moving all its tables."""
    W = ctx.world
    best = None
    for kind in [k for k, n in ev.kinds.items() if n > 0]:
        trial = []
        for o, opts in zip(cur, per_table):
            alt = o if o.kind != kind else _cheapest([x for x in opts if x.kind != kind], W)
            if alt is None:
                break
            trial.append(alt)
        else:
            e = rate(trial)
            if _better(e, ev) and (best is None or e.key < best[0].key):
                best = (e, trial)
    return None if best is None else (best[1], best[0])


def _move(ctx, sc, cur, ev, width: int, rate):
    """Re-place shards of the slowest rank (the options stay): one move or one exchange."""
    W, G = ctx.world, ctx.gpus_per_node
    crit = ev.critical
    loads = [c + m for c, m in zip(ev.comp, ev.comm)]
    order = sorted(range(W), key=lambda r: (loads[r], r))
    others = max((loads[r] for r in range(W) if r != crit), default=0.0)
    if others >= loads[crit] * (1 - 1e-6):
        return None                  # another rank is as slow: moving one shard cannot help
    here = [i for i, o in enumerate(cur) if o.scope != "all" and crit in ev.ranks[i]]
    here.sort(key=lambda i: -cur[i].piece_s)
    held = [set() for _ in range(W)]
    for i, o in enumerate(cur):
        if o.scope != "all":
            for r in ev.ranks[i]:
                held[r].add(i)
    base = _fixed(cur, ev)
    budget = ctx.budget

    def fits(r, add, drop=0.0):
        return ev.overflow > 0 or ev.mem[r] + add - drop <= budget

    for i in here:
        o = cur[i]
        if o.scope == "node":
            node = crit // G
            targets = sorted(range(ctx.nodes), key=lambda n: max(loads[n * G:(n + 1) * G]))
            for n in targets[:width]:
                if n == node:
                    continue
                fixed = dict(base)
                fixed[i] = list(range(n * G, (n + 1) * G))
                e = rate(cur, fixed)
                if _better(e, ev):
                    return cur, e
            continue
        for r in [r for r in order if r != crit and i not in held[r]][:width]:
            if loads[r] + o.piece_s < loads[crit] * (1 - 1e-6) and fits(r, o.mem):
                fixed = dict(base)
                fixed[i] = [r if x == crit else x for x in base[i]]
                e = rate(cur, fixed)
                if _better(e, ev):
                    return cur, e
            # exchange: a lighter shard of rank r comes to the slowest rank instead
            for j in sorted(held[r], key=lambda j: -cur[j].piece_s):
                p = cur[j]
                if p.scope != "rank" or p.piece_s >= o.piece_s or crit in ev.ranks[j]:
                    continue
                if loads[r] + o.piece_s - p.piece_s >= loads[crit] * (1 - 1e-6) \
                        or not (fits(r, o.mem, p.mem) and fits(crit, p.mem, o.mem)):
                    continue
                fx = dict(base)
                fx[i] = [r if x == crit else x for x in base[i]]
                fx[j] = [crit if x == r else x for x in base[j]]
                e = rate(cur, fx)
                if _better(e, ev):
                    return cur, e
                break
    return None
