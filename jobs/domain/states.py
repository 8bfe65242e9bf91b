"""State and level codes (plain strings) so the pure domain and the Django choices share one spelling."""

from __future__ import annotations

QUEUED = "queued"
# Kueue says the job can never be admitted as configured (exceeds the queue's maximum, no matching flavor, the
# queue misconfigured): it waits until someone changes the job or the queue, not for its turn.
INADMISSIBLE = "inadmissible"
QUOTA_RESERVED = "quota-reserved"
WAITING_FOR_OBJECTS = "waiting-for-objects"
# A ReplicatedJob waits for others through dependsOn (initializers first): not a placement wait.
WAITING_FOR_STARTUP = "waiting-for-startup"
GANG_PENDING = "gang-pending"
UNSCHEDULABLE = "unschedulable"
ADMITTED = "admitted"
RUNNING = "running"
PREEMPTED = "preempted"
SUSPENDED = "suspended"
SUCCEEDED = "succeeded"
FAILED = "failed"
UNKNOWN = "unknown"

ALL_STATES = (QUEUED, INADMISSIBLE, QUOTA_RESERVED, WAITING_FOR_OBJECTS, WAITING_FOR_STARTUP, GANG_PENDING,
              UNSCHEDULABLE, ADMITTED, RUNNING, PREEMPTED, SUSPENDED, SUCCEEDED, FAILED, UNKNOWN)
# States a job never leaves on its own: retention prunes them, "time to admission" ignores them.
FINISHED_STATES = frozenset({SUCCEEDED, FAILED})
# States in which the gang holds (or held, on its way to running) its capacity.
ADMITTED_STATES = frozenset({ADMITTED, RUNNING})
# States in which a job waits for admission: what "longest waiting" and "why it waits" are about.
WAITING_STATES = frozenset({QUEUED, INADMISSIBLE, QUOTA_RESERVED, WAITING_FOR_OBJECTS, WAITING_FOR_STARTUP,
                            GANG_PENDING, UNSCHEDULABLE, PREEMPTED})
# Waiting states in which the job waits to be placed: the only ones the placement explanation ("fits now", "what
# would make it fit") is about. Quota, startup order and missing objects hold a job before placement does.
PLACEMENT_STATES = frozenset({GANG_PENDING, UNSCHEDULABLE, PREEMPTED})

LEVEL_TRAINJOB = "trainjob"
LEVEL_REPLICATEDJOB = "replicatedjob"
LEVEL_JOB = "job"
LEVEL_LEGACY = "legacy"
LEVEL_NONE = "none"
LEVEL_UNKNOWN = "unknown"
ALL_LEVELS = (LEVEL_TRAINJOB, LEVEL_REPLICATEDJOB, LEVEL_JOB, LEVEL_LEGACY, LEVEL_NONE, LEVEL_UNKNOWN)
