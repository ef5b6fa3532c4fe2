#!/bin/sh
# Runs versitygw on its posix backend under /data and makes the bucket S3_BUCKET (if set) as soon
# as it answers, so that the API replicas, which refuse a bucket that does not exist, find it.
# The bucket is made through the S3 API, signed by curl, as any client would: versitygw keeps
# its owner and ACL beside it. Arguments go to versitygw before the backend.
set -eu
: "${ROOT_ACCESS_KEY:?set ROOT_ACCESS_KEY}" "${ROOT_SECRET_KEY:?set ROOT_SECRET_KEY}"
port="${S3_PORT:-7070}"
region="${S3_REGION:-us-east-1}"
versitygw --access "$ROOT_ACCESS_KEY" --secret "$ROOT_SECRET_KEY" --region "$region" --port ":$port" "$@" posix /data &
pid=$!
trap 'kill -TERM "$pid" 2>/dev/null' TERM INT
if [ -n "${S3_BUCKET:-}" ]; then
  i=0
  while :; do
    # 200: made; 409: it exists already (this volume has been served before).
    # versitygw wants the payload's hash signed: here the empty body's.
    code="$(curl -s -o /dev/null -w '%{http_code}' -X PUT --aws-sigv4 "aws:amz:$region:s3" \
      -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
      --user "$ROOT_ACCESS_KEY:$ROOT_SECRET_KEY" "http://127.0.0.1:$port/$S3_BUCKET" || true)"
    case "$code" in
      200|409) echo "s3: bucket $S3_BUCKET is there ($code)"; break ;;
    esac
    i=$((i + 1))
    if [ "$i" -ge 100 ] || ! kill -0 "$pid" 2>/dev/null; then
      echo "s3: could not make bucket $S3_BUCKET (last answer: $code)" >&2
      kill -TERM "$pid" 2>/dev/null || true
      exit 1
    fi
    sleep 0.2
  done
fi
wait "$pid"
