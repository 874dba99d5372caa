# W2 endpoint: only the standard library, numpy and paho-mqtt (Debian base).
FROM continuum/base:local
COPY workloads /opt/continuum/workloads
ENV PYTHONPATH=/opt/continuum PYTHONUNBUFFERED=1
CMD ["python3", "-m", "workloads", "endpoint", "translation"]
