"""W1, image classification: endpoints pre-process images (resize, JPEG) and
publish them; the remote node classifies them with MobileNetV2 and publishes
the class back."""
