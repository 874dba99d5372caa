# W2 server: Debian's CPU-only PyTorch (in the base-torch image) plus the pinned transformers wheels.
FROM continuum/base-torch:local
COPY wheels /tmp/wheels
COPY workloads/requirements-transformers.txt /tmp/
RUN pip install --no-index --find-links /tmp/wheels --break-system-packages --no-cache-dir \
        -r /tmp/requirements-transformers.txt && rm -rf /tmp/wheels \
    && python3 -c "import transformers, sentencepiece"
COPY workloads /opt/continuum/workloads
ENV PYTHONPATH=/opt/continuum PYTHONUNBUFFERED=1
CMD ["python3", "-m", "workloads", "server", "translation"]
