# W1 endpoint: numpy, Pillow and paho-mqtt from the Debian base (continuum images build).
FROM continuum/base:local
COPY workloads /opt/continuum/workloads
ENV PYTHONPATH=/opt/continuum PYTHONUNBUFFERED=1
CMD ["python3", "-m", "workloads", "endpoint", "image_classification"]
