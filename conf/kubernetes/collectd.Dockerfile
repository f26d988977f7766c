# The image daemonset.yaml runs: Debian 12's collectd with memdiag's .deb
# (libmicrohttpd12 for write_prometheus).
#   make package
#   docker build -f conf/kubernetes/collectd.Dockerfile -t memdiag-collectd:latest build
FROM debian:bookworm-slim
COPY memdiag_*.deb /tmp/
RUN apt-get update \
 && apt-get install -y --no-install-recommends collectd-core libmicrohttpd12 openssl /tmp/memdiag_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/memdiag_*.deb
