# W1 server: TensorFlow (CPU) from the pinned wheels in the build context.
FROM continuum/base:local
COPY wheels /tmp/wheels
COPY workloads/requirements-tensorflow.txt /tmp/
RUN pip install --no-index --find-links /tmp/wheels --break-system-packages --no-cache-dir \
        -r /tmp/requirements-tensorflow.txt && rm -rf /tmp/wheels \
    && TF_CPP_MIN_LOG_LEVEL=3 python3 -c "import tensorflow"
COPY workloads /opt/continuum/workloads
ENV PYTHONPATH=/opt/continuum PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=2
CMD ["python3", "-m", "workloads", "server", "image_classification"]
