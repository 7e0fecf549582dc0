"""Jobs (Flink's ``org.apache.flink.runtime.jobgraph``, ``...executiongraph``, ``...scheduler`` and
``...checkpoint``): the job graph and its chains (:mod:`.job_graph`), the job runtime that deploys
it, routes records between tasks, schedules blocking regions, fails over and rescales
(:mod:`.job_runtime`, the one job runtime; how it wires each task: :mod:`.task_wiring`), the job
specs (:mod:`.job`: a one-stage ``JobSpec`` runs as its one-operator graph), source subtasks
(:mod:`.sources`), the checkpoint coordinator with its completed-checkpoint store
(:mod:`.checkpoint_coordinator`), and the deterministic scheduler that runs a job under a seed and
a fault schedule (:mod:`.sim`: ``simulate`` takes either spec).

Left out: the JobManager's RPC, slot allocation and resource management (every task is deployed at
once unless its region waits for a blocking input), savepoint formats, and high availability.
"""
