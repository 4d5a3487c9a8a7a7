#!/usr/bin/env bash
# Submit a Spark job of spark_jobs/ to Kubernetes without the Spark Operator.
#
#   deploy/k8s/spark/spark-submit.sh https://<api-server>:6443 spark_jobs/job.py [job args...]
#
# Needs spark-submit (pyspark's, or a Spark 4.0 distribution) and a kubeconfig allowed to
# create pods in NAMESPACE; the driver runs as the "spark" ServiceAccount of rbac.yaml
# (kubectl apply -k deploy/k8s/spark). IMAGE is built with deploy/k8s/spark/Dockerfile.
set -euo pipefail

if [[ $# -lt 2 ]]; then
  sed -n '2,9p' "$0" >&2
  exit 2
fi
api_server=$1
job=$2
shift 2

NAMESPACE=${NAMESPACE:-default}
IMAGE=${IMAGE:-canal-bridge-spark:0.1.0}
EXECUTORS=${EXECUTORS:-2}

exec spark-submit \
  --master "k8s://${api_server}" \
  --deploy-mode cluster \
  --name "canal-$(basename "${job}" .py | tr '_' '-')" \
  --conf "spark.kubernetes.namespace=${NAMESPACE}" \
  --conf "spark.kubernetes.container.image=${IMAGE}" \
  --conf "spark.kubernetes.authenticate.driver.serviceAccountName=spark" \
  --conf "spark.executor.instances=${EXECUTORS}" \
  --conf "spark.jars.packages=org.apache.spark:spark-sql-kafka-0-10_2.13:4.0.0" \
  --conf "spark.jars.ivy=/tmp/.ivy2" \
  --conf "spark.sql.session.timeZone=UTC" \
  "local:///opt/spark/work-dir/${job}" "$@"
