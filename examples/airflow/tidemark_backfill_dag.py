"""A sharded tidemark backfill from Airflow (2.3+): one mapped task per shard.

Trigger it by hand with the range (and, if you like, the number of shards) as params:

    airflow dags trigger tidemark_backfill --conf '{"from": "2026-01-01", "to": "2026-03-31", "shards": 4}'

`backfill_shard.expand(shard=...)` maps the task over the shard numbers 1 … N (dynamic task
mapping), each run of the CLI getting TIDEMARK_SHARD=K/N in its environment (K from 1, as
--shard counts; Airflow's own map_index counts from 0). Each shard keeps its
own progress in the table and commits per partition, so a retried task instance resumes after
its last commit, and one whose shard is done exits 0 at once. The hourly DAG (tidemark_dag.py)
may keep running meanwhile. The last task prints `tidemark status`, which lists every shard.

Exit codes, and what the task does with them:

     0  done (also when nothing was new, or the shard was done)
     1  a job failed and needs a person (bad file, bad data)  -> fail, no retry
     2  bad usage or config                                   -> fail, no retry
     3  lost a commit race after retries                      -> retry
     4  storage unavailable after retries                     -> retry
   130  interrupted (SIGTERM, e.g. the worker was stopped)    -> retry (nothing partial was committed)
"""

import json
import os
import subprocess
from datetime import datetime, timedelta

from airflow.decorators import dag, task
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.models.param import Param
from airflow.operators.python import get_current_context

CONFIG = "/opt/tidemark/tidemark.yaml"
JOB = "orders"
MAX_SHARDS = 16
RETRYABLE = {3, 4, 130}


def tidemark(args: list, env: dict) -> dict:
    """Run the tidemark CLI with --json; its report, or an exception that says whether to retry."""
    proc = subprocess.run(["tidemark", *args, "--json"], capture_output=True, text=True, check=False, env={**os.environ, **env})
    print(proc.stderr)  # JSON log lines, each with the invocation's runId
    report = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout.strip() else {}
    if proc.returncode == 0:
        return report
    message = f"tidemark exited {proc.returncode}: {report.get('error', {}).get('message', 'see the log')}"
    if proc.returncode in RETRYABLE:
        raise AirflowException(message)
    raise AirflowFailException(message)


@dag(
    dag_id="tidemark_backfill",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        "from": Param("2026-01-01", type="string"),
        "to": Param("2026-03-31", type="string"),
        "shards": Param(4, type="integer", minimum=1, maximum=MAX_SHARDS),
    },
    default_args={"retries": 3, "retry_delay": timedelta(minutes=2), "retry_exponential_backoff": True},
)
def tidemark_backfill():
    @task
    def shard_numbers() -> list:
        """1 … N: what the shard task is mapped over (--shard K/N counts from 1)."""
        return list(range(1, int(get_current_context()["params"]["shards"]) + 1))

    @task(max_active_tis_per_dagrun=MAX_SHARDS)
    def backfill_shard(shard: int) -> dict:
        """One shard: tidemark backfill --from --to with TIDEMARK_SHARD=K/N; its report goes to XCom."""
        params = get_current_context()["params"]
        args = ["backfill", "--config", CONFIG, "--job", JOB, "--from", params["from"], "--to", params["to"]]
        return tidemark(args, {"TIDEMARK_SHARD": f"{shard}/{int(params['shards'])}"})

    @task(trigger_rule="all_done")
    def status() -> dict:
        """Every shard's progress, also when some failed."""
        return tidemark(["status", "--config", CONFIG, "--job", JOB], {})

    backfill_shard.expand(shard=shard_numbers()) >> status()


tidemark_backfill()
