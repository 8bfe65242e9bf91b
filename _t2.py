import random, time
from benchmarks.answer import _jobs
from jobs.domain import gates
from operator import itemgetter
jobs = _jobs(1000, 50000, random.Random(7))
pl = [k.get("pods", []) for k, _ in jobs]
allp = [p for ps in pl for p in ps]
def m(name, f):
    best = 1e9
    for _ in range(7):
        t = time.process_time(); f(); best = min(best, time.process_time() - t)
    print(name, round(best*1000, 1))
S = itemgetter("spec")
m("spec only", lambda: [list(map(S, p)) for p in pl])
m("spec+meta+labels", lambda: [list(map(itemgetter("labels"), map(itemgetter("metadata"), p))) for p in pl])
m("uniform", lambda: [gates._tally_uniform(p) for p in pl])
import copy
pl2 = copy.deepcopy(pl)
m("uniform, deep-copied (compact memory)", lambda: [gates._tally_uniform(p) for p in pl2])
from jobs.domain.gates import _SPEC,_METADATA,_LABELS,_STATUS,_PHASE,_GROUP,_GROUP_NAME,_NODE,_RJOB,_INDEX
from collections import Counter
def cols(pods):
    specs = list(map(_SPEC, pods))
    labels = list(map(_LABELS, map(_METADATA, pods)))
    groups = list(map(_GROUP_NAME, map(_GROUP, specs)))
    rjobs = list(map(_RJOB, labels))
    indexes = list(map(_INDEX, labels))
    phases = list(map(_PHASE, map(_STATUS, pods)))
    nodes = list(map(_NODE, specs))
    return groups, rjobs, indexes, phases, nodes
pl = [p for p in pl if p and "schedulingGroup" in p[0]["spec"]]
C = [cols(p) for p in pl]
m("cols", lambda: [cols(p) for p in pl])
m("typecheck", lambda: [any(set(map(type, column)) - {str} for column in c) for c in C])
m("counter", lambda: [dict(Counter(zip(*c[:4], map(bool, c[4]), strict=True))) for c in C])
