"""Distributed planning: ``plan(..., n_jobs=2)`` under joblib's Dask backend.

The user-facing promise is that selecting the Dask backend is the only change needed:
``with joblib.parallel_backend("dask"): plan(...)``. Here a local cluster of two worker
*processes* stands in for a real cluster. Processes rather than threads (``processes=False``)
because only then does every task travel as a real cluster task: Theta and the query are pickled,
sent over TCP and rebuilt in another interpreter that imports quiltpriv itself, whereas the
in-process transport hands objects over by reference and would hide a pickling bug. It costs
under a second to start on the 2-core machine.

Skipped cleanly when dask/distributed (the optional ``dask`` extra) are not installed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")
joblib = pytest.importorskip("joblib")

import quiltpriv as qp  # noqa: E402

#: joblib's Dask backend names each task ``batch_of_<function>_<k>_calls-<uuid>``.
BATCH_KEY = re.compile(r"^batch_of_(?P<func>\w+?)_(?P<calls>\d+)_calls-[0-9a-f]+$")


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None)
    c = distributed.Client(cluster)
    try:
        c.wait_for_workers(2, timeout=30)
        yield c
    finally:
        c.close()
        cluster.close()


@pytest.fixture(scope="module")
def alarm():
    import pgmpy

    # pgmpy ships its example networks in the wheel: read the file, no download.
    path = Path(pgmpy.__file__).parent / "utils" / "example_models" / "alarm.bif.gz"
    if not path.is_file():
        pytest.skip(f"pgmpy {pgmpy.__version__} does not bundle alarm.bif.gz")
    return qp.load_model(path)


def _plan_on_cluster(client, *args, **kwargs):
    """``qp.plan`` under the Dask backend; also the (function, calls, worker) of every task."""
    with distributed.get_task_stream(client) as stream, \
            joblib.parallel_backend("dask", client=client):
        p = qp.plan(*args, **kwargs)
    tasks = []
    for rec in stream.data:
        m = BATCH_KEY.match(str(rec["key"]))
        assert m, f"unexpected task {rec['key']!r} on the cluster"
        tasks.append((m["func"], int(m["calls"]), rec["worker"]))
    return p, tasks


def _assert_ran_on_workers(client, tasks, n_sensitive):
    workers = client.scheduler_info()["workers"]
    # The attributes went out as batches (a few per worker, each shipping Theta once): every
    # joblib call on the cluster is one batch, none ran in this process.
    with joblib.parallel_backend("dask", client=client):
        expected = min(n_sensitive, 4 * joblib.effective_n_jobs(2))
    assert sum(calls for _, calls, _ in tasks) == expected
    assert {func for func, _, _ in tasks} == {"_plan_batch"}
    assert {w for _, _, w in tasks} <= set(workers)
    pids = client.run(os.getpid)
    assert set(pids) == set(workers) and os.getpid() not in pids.values()

    def source():  # pickled by value: the worker reports which quiltpriv it imported
        import quiltpriv

        return quiltpriv.__file__

    # The workers ran this quiltpriv, not an older installed copy found first on their path.
    assert set(client.run(source).values()) == {qp.__file__}


def test_alarm_every_node_on_dask_equals_serial(client, alarm):
    # Every node of alarm (37) sensitive; count query over three attributes, as in bench_core.
    query = qp.CountQuery(["MINVOL", "LVEDVOLUME", "ERRCAUTER"], 1000)
    serial = qp.plan(alarm, query, alarm.nodes, 1.0)
    distributed_plan, tasks = _plan_on_cluster(client, alarm, query, alarm.nodes, 1.0, n_jobs=2)
    assert distributed_plan.to_dict() == serial.to_dict()
    assert serial.optimal and len(serial.sensitive) == 37
    _assert_ran_on_workers(client, tasks, len(alarm.nodes))


def test_multi_member_theta_and_linear_query_on_dask(client):
    # A Theta of several members and a weighted linear query must survive the trip as well.
    student = qp.load_model("student:theta")
    assert len(student) > 1
    query = qp.LinearQuery({"height": 1.0, "weight": -1.0, "sat": 0.5},
                           {"height": (0, 1), "weight": (0, 1), "sat": (0, 1)})
    serial = qp.plan(student, query, student.nodes, 1.5)
    distributed_plan, tasks = _plan_on_cluster(client, student, query, student.nodes, 1.5,
                                               n_jobs=2)
    assert distributed_plan.to_dict() == serial.to_dict()
    _assert_ran_on_workers(client, tasks, len(student.nodes))
