"""tidemark from Airflow (2.x): one task per tidemark job, every hour.

Airflow retries every failed task by default. tidemark's exit code says whether a retry can help:

     0  done (also when nothing was new)
     1  a job failed and needs a person (bad file, bad data)  -> fail, no retry
     2  bad usage or config                                   -> fail, no retry
     3  lost a commit race after retries                      -> retry
     4  storage unavailable after retries                     -> retry
   130  interrupted (SIGTERM, e.g. the worker was stopped)    -> retry (nothing partial was committed)

The task runs the CLI with --json, pushes the job's report (one JSON object) to XCom, and raises
AirflowFailException (no retry) or AirflowException (retry) by exit code.
"""

import json
import subprocess
from datetime import datetime, timedelta

from airflow import DAG
from airflow.exceptions import AirflowException, AirflowFailException
from airflow.operators.python import PythonOperator

CONFIG = "/opt/tidemark/tidemark.yaml"
RETRYABLE = {3, 4, 130}


def run_tidemark(job: str) -> dict:
    """Run `tidemark run --job JOB --json`; return its report, or fail (with or without retry)."""
    proc = subprocess.run(
        ["tidemark", "run", "--config", CONFIG, "--job", job, "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    print(proc.stderr)  # JSON log lines, each with the invocation's runId
    report = json.loads(proc.stdout.splitlines()[-1]) if proc.stdout.strip() else {}
    if proc.returncode == 0:
        return report  # pushed to XCom: status, filesLoaded, inserted, updated, tableVersion, ...
    message = f"tidemark exited {proc.returncode}: {report.get('error', {}).get('message', 'see the log')}"
    if proc.returncode in RETRYABLE:
        raise AirflowException(message)
    raise AirflowFailException(message)


with DAG(
    dag_id="tidemark",
    schedule="5 * * * *",
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,  # never two runs of the DAG at once
    default_args={"retries": 3, "retry_delay": timedelta(minutes=5), "retry_exponential_backoff": True},
) as dag:
    for job in ["orders", "clicks"]:
        PythonOperator(task_id=f"load_{job}", python_callable=run_tidemark, op_kwargs={"job": job})
