/*===- audio.c - a speech model's input: audio files, log-mel features ---===//
 *
 * tfm_audio_load reads an audio file with libsndfile, mixes it down to
 * mono, resamples it with libsoxr and hands it to tfm_log_mel, which
 * computes Whisper's features as WhisperFeatureExtractor does (its torch
 * path: torch.stft, centered, reflect padding, periodic Hann window; the
 * last frame dropped) in double precision, with FFTW's real FFT. The mel
 * filters are transformers' mel_filter_bank(norm="slaney",
 * mel_scale="slaney") from 0 to 8 kHz, computed here from the model's
 * recorded parameters. tfm_kaldi_fbank computes the Audio Spectrogram
 * Transformer's Kaldi-style filterbanks as ASTFeatureExtractor's NumPy
 * path does (transformers' spectrogram() with remove_dc_offset,
 * preemphasis and mel_filter_bank(mel_scale="kaldi",
 * triangularize_in_mel_space=True)). tfm_audio_read gives a file's
 * samples whole, for the models that hear them raw (Wav2Vec2). Files are
 * checked by their headers (rate, channels, duration) before they are
 * decoded, then decoded in chunks no further than the model hears.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/media/refusals.h"
#include "tfm/tfm_runtime.h"

#include <fftw3.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sndfile.h>
#include <soxr.h>
#include <stdlib.h>
#include <string.h>

/* Slaney's mel scale: linear below 1 kHz, logarithmic above. */
static double hertz_to_mel(double hertz) {
  const double min_log_hertz = 1000.0, min_log_mel = 15.0;
  const double logstep = 27.0 / log(6.4);
  return hertz >= min_log_hertz
             ? min_log_mel + log(hertz / min_log_hertz) * logstep
             : 3.0 * hertz / 200.0;
}

static double mel_to_hertz(double mel) {
  const double min_log_hertz = 1000.0, min_log_mel = 15.0;
  const double logstep = log(6.4) / 27.0;
  return mel >= min_log_mel ? min_log_hertz * exp(logstep * (mel - min_log_mel))
                            : 200.0 * mel / 3.0;
}

/* filters[k * mels + m]: weight of frequency bin k in mel bin m, as
 * mel_filter_bank computes it (triangles between mel-spaced edges, each
 * scaled by 2 / its width in Hz). */
static void mel_filters(int64_t bins, int64_t mels, double rate,
                        double *filters) {
  double low = hertz_to_mel(0.0), high = hertz_to_mel(8000.0);
  double *edges = malloc((size_t)(mels + 2) * sizeof *edges);
  for (int64_t i = 0; i < mels + 2; ++i)
    edges[i] = mel_to_hertz(low + (high - low) * (double)i / (double)(mels + 1));
  for (int64_t k = 0; k < bins; ++k) {
    /* np.linspace(0, sampling_rate // 2, bins) */
    double hertz = (double)((int64_t)rate / 2) * (double)k / (double)(bins - 1);
    for (int64_t m = 0; m < mels; ++m) {
      double down = (hertz - edges[m]) / (edges[m + 1] - edges[m]);
      double up = (edges[m + 2] - hertz) / (edges[m + 2] - edges[m + 1]);
      double weight = fmax(0.0, fmin(down, up));
      filters[k * mels + m] = weight * 2.0 / (edges[m + 2] - edges[m]);
    }
  }
  free(edges);
}

/* FFTW's planner is not thread-safe; executing a plan is. */
static pthread_mutex_t planner = PTHREAD_MUTEX_INITIALIZER;

/* The log-mel features of samples[0..n) padded with silence or cut to
 * `length` samples (length / hop frames into `features`), normalized by
 * their own maximum. */
static tfm_status_code log_mel(const tfm_audio_preprocessing *p,
                               const float *samples, int64_t n, int64_t length,
                               float *features, tfm_status *status) {
  int64_t hop = p->hop_length, n_fft = p->n_fft;
  int64_t frames = length / hop, mels = p->mel_bins, bins = n_fft / 2 + 1;
  int64_t pad = n_fft / 2;
  double *signal = calloc((size_t)(length + 2 * pad), sizeof *signal);
  double *window = malloc((size_t)n_fft * sizeof *window);
  double *filters = malloc((size_t)(bins * mels) * sizeof *filters);
  double *mel = malloc((size_t)(mels * frames) * sizeof *mel);
  double *frame = fftw_malloc((size_t)n_fft * sizeof *frame);
  fftw_complex *spectrum = fftw_malloc((size_t)bins * sizeof *spectrum);
  double *power = malloc((size_t)bins * sizeof *power);
  fftw_plan plan = NULL;
  if (signal && window && filters && mel && frame && spectrum && power) {
    pthread_mutex_lock(&planner);
    plan = fftw_plan_dft_r2c_1d((int)n_fft, frame, spectrum, FFTW_ESTIMATE);
    pthread_mutex_unlock(&planner);
  }
  if (!plan) {
    free(signal), free(window), free(filters), free(mel), free(power);
    fftw_free(frame), fftw_free(spectrum);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  /* The chunk, then its ends reflected (torch.stft's center=True). */
  double *x = signal + pad;
  for (int64_t i = 0; i < length && i < n; ++i)
    x[i] = samples[i];
  for (int64_t i = 1; i <= pad; ++i) {
    x[-i] = x[i];
    x[length - 1 + i] = x[length - 1 - i];
  }
  for (int64_t i = 0; i < n_fft; ++i) /* periodic Hann */
    window[i] = 0.5 - 0.5 * cos(2.0 * M_PI * (double)i / (double)n_fft);
  mel_filters(bins, mels, (double)p->sampling_rate, filters);
  /* Each filter's nonzero bins, so that the product skips the zeros. */
  int64_t *first = malloc((size_t)mels * 2 * sizeof *first);
  int64_t *last = first ? first + mels : NULL;
  for (int64_t m = 0; first && m < mels; ++m) {
    first[m] = bins;
    last[m] = 0;
    for (int64_t k = 0; k < bins; ++k)
      if (filters[k * mels + m] != 0) {
        first[m] = k < first[m] ? k : first[m];
        last[m] = k + 1;
      }
  }
  double maximum = -INFINITY;
  for (int64_t t = 0; first && t < frames; ++t) {
    const double *segment = signal + t * hop;
    for (int64_t i = 0; i < n_fft; ++i)
      frame[i] = segment[i] * window[i];
    fftw_execute_dft_r2c(plan, frame, spectrum);
    for (int64_t k = 0; k < bins; ++k)
      power[k] = spectrum[k][0] * spectrum[k][0] + spectrum[k][1] * spectrum[k][1];
    for (int64_t m = 0; m < mels; ++m) {
      double sum = 0;
      for (int64_t k = first[m]; k < last[m]; ++k)
        sum += filters[k * mels + m] * power[k];
      double value = log10(fmax(sum, 1e-10));
      mel[m * frames + t] = value;
      maximum = fmax(maximum, value);
    }
  }
  for (int64_t i = 0; first && i < mels * frames; ++i)
    features[i] = (float)((fmax(mel[i], maximum - 8.0) + 4.0) / 4.0);
  pthread_mutex_lock(&planner);
  fftw_destroy_plan(plan);
  pthread_mutex_unlock(&planner);
  int ok = first != NULL;
  free(first);
  free(signal), free(window), free(filters), free(mel), free(power);
  fftw_free(frame), fftw_free(spectrum);
  return ok ? TFM_OK : tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
}

/* The model's log-mel preprocessing, or NULL after failing with why. */
static const tfm_audio_preprocessing *
log_mel_preprocessing(const tfm_model *model, tfm_status *status) {
  const tfm_audio_preprocessing *p =
      tfm_model_get_desc(model)->audio_preprocessing;
  if (!p || p->kaldi) {
    tfm_fail(status, TFM_ERROR_NOT_FOUND, TFM_NO_AUDIO_PREPROCESSING,
             tfm_model_get_desc(model)->name);
    return NULL;
  }
  return p;
}

tfm_status_code tfm_log_mel(const tfm_model *model, const float *samples,
                            int64_t n, float *features, int64_t capacity,
                            tfm_status *status) {
  if (!model || (!samples && n > 0) || !features || n < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_log_mel: NULL argument");
  const tfm_audio_preprocessing *p = log_mel_preprocessing(model, status);
  if (!p)
    return status ? status->code : TFM_ERROR_NOT_FOUND;
  int64_t needed = p->mel_bins * (p->samples / p->hop_length);
  if (capacity < needed)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_log_mel: room for %lld features, %lld needed",
                    (long long)capacity, (long long)needed);
  return log_mel(p, samples, n, p->samples, features, status);
}

tfm_status_code tfm_log_mel_all(const tfm_model *model, const float *samples,
                                int64_t n, float **features, int64_t *frames,
                                tfm_status *status) {
  if (!model || (!samples && n > 0) || !features || !frames || n < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_log_mel_all: NULL argument");
  const tfm_audio_preprocessing *p = log_mel_preprocessing(model, status);
  if (!p)
    return status ? status->code : TFM_ERROR_NOT_FOUND;
  /* The centered STFT reflects n_fft / 2 samples at each end. */
  if (n <= p->n_fft / 2 || n < p->hop_length)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "%lld samples are too few for log-mel features: at "
                    "least %lld (%.3f s) are needed",
                    (long long)n, (long long)(p->n_fft / 2 + 1),
                    (double)(p->n_fft / 2 + 1) / (double)p->sampling_rate);
  int64_t count = n / p->hop_length;
  float *out = malloc((size_t)(p->mel_bins * count) * sizeof *out);
  if (!out)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for %lld frames of log-mel features",
                    (long long)count);
  tfm_status_code code = log_mel(p, samples, n, n, out, status);
  if (code != TFM_OK) {
    free(out);
    return code;
  }
  *features = out;
  *frames = count;
  return TFM_OK;
}

/* Kaldi's mel scale. */
static double kaldi_mel(double hertz) { return 1127.0 * log(1.0 + hertz / 700.0); }

/* filters[k * mels + m]: weight of FFT bin k in mel bin m, triangles in
 * Kaldi's mel space from 20 Hz to Nyquist over the first n_fft / 2 bins
 * (the Nyquist bin gets none), as mel_filter_bank(..., mel_scale="kaldi",
 * triangularize_in_mel_space=True) and ASTFeatureExtractor's padding. */
static void kaldi_filters(int64_t bins, int64_t mels, double rate,
                          double *filters) {
  double low = kaldi_mel(20.0), high = kaldi_mel(rate / 2);
  double *edges = malloc((size_t)(mels + 2) * sizeof *edges);
  for (int64_t i = 0; edges && i < mels + 2; ++i)
    edges[i] = low + (high - low) * (double)i / (double)(mels + 1);
  for (int64_t k = 0; edges && k < bins; ++k) {
    double mel = kaldi_mel(rate / (2.0 * (double)(bins - 1)) * (double)k);
    for (int64_t m = 0; m < mels; ++m) {
      double down = (mel - edges[m]) / (edges[m + 1] - edges[m]);
      double up = (edges[m + 2] - mel) / (edges[m + 2] - edges[m + 1]);
      filters[k * mels + m] = k == bins - 1 ? 0.0 : fmax(0.0, fmin(down, up));
    }
  }
  free(edges);
}

tfm_status_code tfm_kaldi_fbank(const tfm_model *model, const float *samples,
                                int64_t n, float *features, int64_t capacity,
                                tfm_status *status) {
  if (!model || (!samples && n > 0) || !features || n < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_kaldi_fbank: NULL argument");
  const tfm_audio_preprocessing *p =
      tfm_model_get_desc(model)->audio_preprocessing;
  if (!p || !p->kaldi)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' takes no Kaldi filterbanks",
                    tfm_model_get_desc(model)->name);
  int64_t window = p->window_length, hop = p->hop_length, n_fft = p->n_fft;
  int64_t mels = p->mel_bins, frames = p->frames, bins = n_fft / 2 + 1;
  if (capacity < mels * frames)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_kaldi_fbank: room for %lld features, %lld needed",
                    (long long)capacity, (long long)(mels * frames));
  if (n < window)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "a clip of %lld samples is shorter than one %lld-sample "
                    "window of model '%s'",
                    (long long)n, (long long)window,
                    tfm_model_get_desc(model)->name);
  int64_t count = 1 + (n - window) / hop;
  if (count > frames)
    count = frames;
  double *filters = malloc((size_t)(bins * mels) * sizeof *filters);
  double *frame = fftw_malloc((size_t)n_fft * sizeof *frame);
  fftw_complex *spectrum = fftw_malloc((size_t)bins * sizeof *spectrum);
  double *power = malloc((size_t)bins * sizeof *power);
  double *hann = malloc((size_t)window * sizeof *hann);
  fftw_plan plan = NULL;
  if (filters && frame && spectrum && power && hann) {
    pthread_mutex_lock(&planner);
    plan = fftw_plan_dft_r2c_1d((int)n_fft, frame, spectrum, FFTW_ESTIMATE);
    pthread_mutex_unlock(&planner);
  }
  if (!plan) {
    free(filters), free(power), free(hann);
    fftw_free(frame), fftw_free(spectrum);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  kaldi_filters(bins, mels, (double)p->sampling_rate, filters);
  for (int64_t i = 0; i < window; ++i) /* symmetric Hann */
    hann[i] = 0.5 - 0.5 * cos(2.0 * M_PI * (double)i / (double)(window - 1));
  const double preemphasis = 0.97, floor_ = 1.192092955078125e-07;
  float mean = p->mean, scale = (float)(2.0 * (double)p->std);
  for (int64_t t = 0; t < frames; ++t) {
    if (t >= count) { /* padding: zeros before normalization */
      for (int64_t m = 0; m < mels; ++m)
        features[m * frames + t] = p->normalize ? (0.0f - mean) / scale : 0.0f;
      continue;
    }
    const float *x = samples + t * hop;
    double dc = 0;
    for (int64_t i = 0; i < window; ++i)
      dc += x[i];
    dc /= (double)window;
    for (int64_t i = window - 1; i >= 0; --i) {
      double previous = i ? (double)x[i - 1] - dc : 0.0;
      double value = (double)x[i] - dc;
      value = i ? value - preemphasis * previous : value * (1 - preemphasis);
      frame[i] = value * hann[i];
    }
    for (int64_t i = window; i < n_fft; ++i)
      frame[i] = 0;
    fftw_execute_dft_r2c(plan, frame, spectrum);
    for (int64_t k = 0; k < bins; ++k) {
      /* transformers keeps the FFT as complex64 before |.|^2. */
      double re = (float)spectrum[k][0], im = (float)spectrum[k][1];
      power[k] = re * re + im * im;
    }
    for (int64_t m = 0; m < mels; ++m) {
      double sum = 0;
      for (int64_t k = 0; k < bins; ++k)
        sum += filters[k * mels + m] * power[k];
      float value = (float)log(fmax(floor_, sum));
      features[m * frames + t] = p->normalize ? (value - mean) / scale : value;
    }
  }
  pthread_mutex_lock(&planner);
  fftw_destroy_plan(plan);
  pthread_mutex_unlock(&planner);
  free(filters), free(power), free(hann);
  fftw_free(frame), fftw_free(spectrum);
  return TFM_OK;
}

/* What a header may claim, checked before any sample is decoded: a 37 KB
 * FLAC of an hour of silence at 48 kHz was decoded whole (1.37 GB, 6.4 s)
 * before its length was refused, a FLAC at 655 350 Hz asked for 19 GB, and
 * eight channels multiplied it all by eight. Files are decoded in chunks
 * and mixed down as they come, no further than the model hears, so memory
 * follows the duration a model accepts, not the file's claims. */
enum {
  kMinRate = 1000,         /* Hz: below telephony's 8 kHz by far */
  kMaxRate = 384000,       /* Hz: the highest rate audio interfaces record */
  kMaxChannels = 8,        /* 7.1; FLAC's own limit */
  kMaxSeconds = 3600,      /* longer is a malformed header, not a request, */
  kMaxLongSeconds = 86400, /* unless a long-form transcript asks for more */
  kChunkFrames = 65536     /* decoded at a time */
};

/* How much of a file a model takes: a waveform model (Wav2Vec2) at most
 * `max_samples` at `rate` Hz and refuses a longer file (its call would
 * refuse the samples), others the first `keep` seconds (Whisper's and the
 * Audio Spectrogram Transformer's chunk), the rest left unread; none longer
 * than `max_seconds` (kMaxSeconds unless a long-form transcript asks). */
typedef struct {
  const char *model;
  int64_t rate, max_samples;
  double keep, max_seconds;
} audio_bounds;

/* The header's claims against the bounds above and the model's. */
static tfm_status_code check_header(const char *path, const SF_INFO *info,
                                    const audio_bounds *bounds,
                                    tfm_status *status) {
  if (info->frames <= 0 || info->channels <= 0)
    return tfm_fail(status, TFM_ERROR_AUDIO, "'%s' has no samples", path);
  if (info->samplerate < kMinRate || info->samplerate > kMaxRate)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' is sampled at %d Hz: tfmc reads audio sampled at "
                    "%d to %d Hz",
                    path, info->samplerate, kMinRate, kMaxRate);
  if (info->channels > kMaxChannels)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' has %d channels: tfmc mixes down at most %d", path,
                    info->channels, kMaxChannels);
  double seconds = (double)info->frames / info->samplerate;
  double longest = bounds->max_seconds > 0 ? bounds->max_seconds : kMaxSeconds;
  if ((double)info->frames > (double)info->samplerate * longest)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' claims %.1f s (%lld frames at %d Hz): more than "
                    "%.0f s is not audio tfmc transcribes%s",
                    path, seconds, (long long)info->frames, info->samplerate,
                    longest,
                    longest < kMaxLongSeconds ? " here (a longer limit may "
                                                "be asked for)"
                                              : "");
  /* frames / samplerate > max_samples / rate, in integers (an hour at
   * 384 kHz times a rate is far under 2^63; a longest clip past 2^63 /
   * kMaxRate bounds nothing). */
  if (bounds->max_samples > 0 && bounds->max_samples < INT64_MAX / kMaxRate &&
      info->frames * bounds->rate > bounds->max_samples * info->samplerate)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' lasts %.1f s (%lld frames at %d Hz), longer than "
                    "model '%s' takes (%lld samples at %lld Hz, %.1f s): "
                    "split it",
                    path, seconds, (long long)info->frames, info->samplerate,
                    bounds->model, (long long)bounds->max_samples,
                    (long long)bounds->rate,
                    (double)bounds->max_samples / (double)bounds->rate);
  return TFM_OK;
}

/* libsndfile reads what a cut file holds and notes in its log that the
 * header promised more ("data : 32000 (should be 15978)"): refuse that
 * rather than transcribe part of the audio. */
static tfm_status_code check_complete(SNDFILE *file, const char *path,
                                      tfm_status *status) {
  char log[2048] = "";
  sf_command(file, SFC_GET_LOG_INFO, log, sizeof log);
  long long promised = 0, present = 0;
  const char *data = strstr(log, "\ndata : ");
  if (data &&
      sscanf(data, "\ndata : %lld (should be %lld)", &promised, &present) == 2 &&
      present < promised)
    return tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' is truncated: its header promises %lld bytes of "
                    "samples, %lld are there",
                    path, promised, present);
  return TFM_OK;
}

/* `count` frames of `channels` interleaved samples, each frame's mean into
 * mono[0..count); the first NaN or infinity is refused by its frame (a WAV
 * of float samples may hold any bit pattern, and a NaN would reach the
 * model's every output). */
static tfm_status_code mix_down(const char *path, const float *interleaved,
                                int64_t count, int channels, int64_t first,
                                float *mono, tfm_status *status) {
  for (int64_t i = 0; i < count; ++i) {
    double sum = 0;
    for (int c = 0; c < channels; ++c) {
      float sample = interleaved[i * channels + c];
      if (!isfinite(sample))
        return tfm_fail(status, TFM_ERROR_AUDIO,
                        "'%s' holds a non-finite sample (%s) at frame %lld "
                        "(channel %d): audio samples must be finite",
                        path,
                        isnan(sample) ? "NaN"
                        : sample > 0  ? "infinity"
                                      : "-infinity",
                        (long long)(first + i), c);
      sum += sample;
    }
    mono[i] = (float)(sum / channels);
  }
  return TFM_OK;
}

/* The file's samples mixed down to mono (the channels' mean) into *out,
 * with their count and rate: the first `bounds->keep` seconds (and a tenth
 * of a second for the resampling filter) where it is positive, else all
 * of them. */
static tfm_status_code read_mono(const char *path, const audio_bounds *bounds,
                                 float **out, int64_t *n, int *rate,
                                 tfm_status *status) {
  SF_INFO info;
  memset(&info, 0, sizeof info);
  SNDFILE *file = sf_open(path, SFM_READ, &info);
  if (!file) {
    return tfm_fail(status, TFM_ERROR_AUDIO, "cannot read audio '%s': %s", path,
             sf_strerror(NULL));
  }
  tfm_status_code code = check_complete(file, path, status);
  if (code == TFM_OK)
    code = check_header(path, &info, bounds, status);
  if (code != TFM_OK) {
    sf_close(file);
    return code;
  }
  int64_t wanted = info.frames;
  if (bounds->keep > 0) {
    int64_t kept = (int64_t)ceil(bounds->keep * info.samplerate) +
                   info.samplerate / 10 + 16;
    wanted = kept < wanted ? kept : wanted;
  }
  /* The samples grow as they are decoded: a header may claim hours that
   * a few bytes do not hold, and is found out before they are paid for. */
  float *chunk =
      malloc((size_t)kChunkFrames * (size_t)info.channels * sizeof(float));
  int64_t room = wanted < kChunkFrames ? wanted : kChunkFrames;
  float *mono = malloc((size_t)room * sizeof(float));
  int64_t done = 0;
  while (code == TFM_OK && chunk && mono && done < wanted) {
    int64_t ask = wanted - done < kChunkFrames ? wanted - done : kChunkFrames;
    if (done + ask > room) {
      room = room * 2 < wanted ? room * 2 : wanted;
      float *grown = realloc(mono, (size_t)room * sizeof(float));
      if (!grown) {
        free(mono);
        mono = NULL;
        break;
      }
      mono = grown;
    }
    sf_count_t got = sf_readf_float(file, chunk, ask);
    if (got <= 0 || sf_error(file))
      break;
    code = mix_down(path, chunk, got, info.channels, done, mono + done, status);
    done += got;
  }
  if (!chunk || !mono) {
    free(chunk), free(mono);
    sf_close(file);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for %lld samples of '%s'", (long long)wanted,
                    path);
  }
  int error = sf_error(file);
  sf_close(file);
  free(chunk);
  if (code == TFM_OK && (done != wanted || error))
    code = tfm_fail(status, TFM_ERROR_AUDIO,
                    "'%s' is truncated or corrupt: %lld of %lld frames read",
                    path, (long long)done, (long long)wanted);
  if (code != TFM_OK) {
    free(mono);
    return code;
  }
  *out = mono;
  *n = wanted;
  *rate = info.samplerate;
  return TFM_OK;
}

/* The mono samples of the file at `path` resampled to `bounds->rate` Hz
 * (libsoxr, high quality) where they are at another rate: *samples
 * (malloc'd) and *n. Only what read_mono kept is resampled: a 1 Hz file of
 * 800 samples was resampled whole to 12.8 M samples, over a second (found
 * by fuzz-audio; such rates are now refused too). */
static tfm_status_code read_at_rate(const char *path,
                                    const audio_bounds *bounds, float **out,
                                    int64_t *count, tfm_status *status) {
  int64_t n = 0, to = bounds->rate;
  int rate = 0;
  float *samples = NULL;
  tfm_status_code read = read_mono(path, bounds, &samples, &n, &rate, status);
  if (read != TFM_OK)
    return read;
  if (rate != to) {
    size_t room = (size_t)((double)n * (double)to / rate) + 16;
    float *resampled = malloc(room * sizeof *resampled);
    size_t done = 0;
    soxr_quality_spec_t quality = soxr_quality_spec(SOXR_HQ, 0);
    soxr_error_t error =
        resampled ? soxr_oneshot(rate, (double)to, 1, samples, (size_t)n, NULL,
                                 resampled, room, &done, NULL, &quality, NULL)
                  : "out of memory";
    free(samples);
    if (error) {
      free(resampled);
      return tfm_fail(status, TFM_ERROR_AUDIO,
                      "cannot resample '%s' from %d to %lld Hz: %s", path, rate,
                      (long long)to, error);
    }
    samples = resampled;
    n = (int64_t)done;
  }
  *out = samples;
  *count = n;
  return TFM_OK;
}

tfm_status_code tfm_audio_load(const tfm_model *model, const char *path,
                               float *features, int64_t capacity,
                               tfm_status *status) {
  if (!model || !path || !features)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_audio_load: NULL argument");
  const tfm_audio_preprocessing *p =
      tfm_model_get_desc(model)->audio_preprocessing;
  if (!p)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND, TFM_NO_AUDIO_PREPROCESSING,
                    tfm_model_get_desc(model)->name);
  float *samples = NULL;
  int64_t n = 0;
  /* Only as much as the chunk needs. */
  audio_bounds bounds = {tfm_model_get_desc(model)->name, p->sampling_rate, 0,
                         (double)p->samples / (double)p->sampling_rate, 0};
  tfm_status_code code = read_at_rate(path, &bounds, &samples, &n, status);
  if (code != TFM_OK)
    return code;
  code = p->kaldi
             ? tfm_kaldi_fbank(model, samples, n, features, capacity, status)
             : tfm_log_mel(model, samples, n, features, capacity, status);
  free(samples);
  return code;
}

tfm_status_code tfm_audio_read(const tfm_model *model, const char *path,
                               float **samples, int64_t *n,
                               tfm_status *status) {
  if (!model || !path || !samples || !n)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_audio_read: NULL argument");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int64_t rate = desc->waveform ? desc->waveform->sampling_rate
                 : desc->audio_preprocessing
                     ? desc->audio_preprocessing->sampling_rate
                     : 0;
  if (!rate)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND, TFM_NO_AUDIO_PREPROCESSING,
                    desc->name);
  *samples = NULL;
  *n = 0;
  /* No more than the model takes (a waveform model: its longest clip,
   * longer files refused by their header; Whisper: its chunk): a few bytes
   * of header claiming an hour must not be decoded, or resampled, whole. */
  audio_bounds bounds = {desc->name, rate, 0, 0, 0};
  if (desc->waveform)
    bounds.max_samples = desc->max_context;
  else
    bounds.keep = (double)desc->audio_preprocessing->samples / (double)rate;
  return read_at_rate(path, &bounds, samples, n, status);
}

tfm_status_code tfm_audio_read_all(const tfm_model *model, const char *path,
                                   double max_seconds, float **samples,
                                   int64_t *n, tfm_status *status) {
  if (!model || !path || !samples || !n)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_audio_read_all: NULL argument");
  if (!(max_seconds > 0 && max_seconds <= kMaxLongSeconds))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_audio_read_all: a longest duration of %g s; "
                    "expected more than 0 and at most %d",
                    max_seconds, kMaxLongSeconds);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_audio_preprocessing *p = desc->audio_preprocessing;
  int64_t rate = desc->waveform   ? desc->waveform->sampling_rate
                 : p && !p->kaldi ? p->sampling_rate
                                  : 0;
  if (!rate)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND, TFM_NO_AUDIO_PREPROCESSING,
                    desc->name);
  *samples = NULL;
  *n = 0;
  audio_bounds bounds = {desc->name, rate, 0, 0, max_seconds};
  return read_at_rate(path, &bounds, samples, n, status);
}
