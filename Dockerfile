FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY fastmcp_temporal ./fastmcp_temporal
COPY workflows ./workflows
COPY activities ./activities
COPY server ./server
COPY examples ./examples
RUN pip install --no-cache-dir ".[s3]"
EXPOSE 8000
CMD ["python", "examples/demo_server.py", "--host", "0.0.0.0", "--port", "8000"]
