"""W1, image classification: the endpoint pre-processes an image and sends it;
the remote node classifies it with MobileNetV2 (TensorFlow/Keras) and sends
back the class (~20 bytes)."""
