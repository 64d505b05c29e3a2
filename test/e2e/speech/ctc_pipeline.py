"""transformers 4.40's automatic-speech-recognition pipeline for a CTC
model with chunk_length_s, stride_length_s and return_timestamps="word",
in NumPy over any recognizer's logits (make_ctc_chunks_goldens.py runs it
on 4.40's model; check_ctc_chunks.py on tfmc's own, so that the chunking,
joining and word times are checked exactly, apart from the near-ties of
two implementations' logits): chunk_iter and rescale_stride from
pipelines/automatic_speech_recognition.py, the grouping and word offsets
from Wav2Vec2CTCTokenizer.convert_tokens_to_string and _get_word_offsets.
"""
import itertools

import numpy as np


def chunk_iter(inputs, chunk_len, stride_left, stride_right):
    """Chunks of chunk_len samples a step of chunk_len - strides apart,
    each with the strides it shares (none before the first, none after the
    last): (samples, (length, left, right))."""
    step = chunk_len - stride_left - stride_right
    for start in range(0, inputs.shape[0], step):
        end = start + chunk_len
        chunk = inputs[start:end]
        left = 0 if start == 0 else stride_left
        is_last = end > inputs.shape[0] if stride_right > 0 else \
            end >= inputs.shape[0]
        right = 0 if is_last else stride_right
        if chunk.shape[0] > left:
            yield chunk, (chunk.shape[0], left, right)
        if is_last:
            break


def rescale_stride(stride, ratio):
    """Samples to logit frames."""
    input_n, left, right = stride
    token_n = int(round(input_n * ratio))
    return (token_n, int(round(left / input_n * token_n)),
            int(round(right / input_n * token_n)))


def chunked_labels(logits_of, samples, chunk_length_s, stride_length_s,
                   rate, align):
    """Every chunk's frames' labels but its strides', joined; logits_of
    gives a chunk's [frames, labels] logits."""
    if stride_length_s is None:
        stride_length_s = chunk_length_s / 6
    chunk_len = int(round(chunk_length_s * rate / align) * align)
    stride = int(round(stride_length_s * rate / align) * align)
    labels = []
    for chunk, chunk_stride in chunk_iter(samples, chunk_len, stride, stride):
        tokens = np.asarray(logits_of(chunk)).argmax(-1)
        total_n, left, right = rescale_stride(chunk_stride, 1 / align)
        labels.append(tokens[left:total_n - right])
    return np.concatenate(labels)


def word_offsets(labels, spelling, blank, delimiter, seconds_a_frame):
    """Words and their times: runs of a label grouped, blanks dropped,
    words between delimiters from their first run's start to their last
    run's end."""
    words, word, start, end, frame = [], None, 0, 0, 0
    for label, run in itertools.groupby(labels):
        length = len(list(run))
        if label != blank:
            if label == delimiter:
                if word is not None:
                    words.append((word, start, end))
                word = None
            else:
                if word is None:
                    word, start = "", frame
                word += spelling[label]
                end = frame + length
        frame += length
    if word is not None:
        words.append((word, start, end))
    return [dict(word=w, start=s * seconds_a_frame, end=e * seconds_a_frame)
            for w, s, e in words]
