"""GPT-2's byte-level alphabet, shared by the golden scripts that write
byte-level BPE tokenizers (make_whisper_goldens.py,
make_seq2seq_text_goldens.py)."""


def byte_alphabet():
    """GPT-2's bytes_to_unicode, in byte order: printable bytes stand for
    themselves, the others for code points from 256 on."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    chars, n = [], 0
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(256 + n))
            n += 1
    return chars
