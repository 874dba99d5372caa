"""W2, text translation: the endpoint sends an English phrase of 100-200 bytes;
the remote node translates it to German with MarianMT (the opus-mt-en-de
architecture, PyTorch) and sends the text back."""
