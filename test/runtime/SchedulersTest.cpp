//===- SchedulersTest.cpp - diffusers' schedulers, torch.randn, replayed
//---===//
//
// runtime/diffusion against diffusers 0.27.2 and torch 1.13, from the
// goldens make_scheduler_goldens.py writes (Inputs/schedulers.bin): each
// sampling run is replayed from the same scheduler_config.json keys, the
// same pipeline fix-ups and scheduler switch, the same seed and the same
// synthetic model, and every step's latents must agree within
// 1e-5 x max(1, |diffusers'|); timesteps and init_noise_sigma within 1e-6
// relative (all of them agree bit for bit with glibc's libm; the
// tolerances leave room for another's pow and log); alphas_cumprod and
// torch.randn bit for bit. Then the errors: each refusal names what it
// refuses.
//
//===----------------------------------------------------------------------===//

#include "runtime/diffusion/schedulers.h"
#include "runtime/diffusion/torch_randn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

/// Little-endian reads from the goldens file.
class Reader {
public:
  explicit Reader(std::vector<uint8_t> bytes) : bytes(std::move(bytes)) {}
  template <typename T> T read() {
    T value{};
    if (at + sizeof(T) > bytes.size()) {
      failed = true;
      return value;
    }
    std::memcpy(&value, bytes.data() + at, sizeof(T));
    at += sizeof(T);
    return value;
  }
  std::string string() {
    auto length = read<uint16_t>();
    if (at + length > bytes.size()) {
      failed = true;
      return {};
    }
    std::string s(reinterpret_cast<const char *>(bytes.data() + at), length);
    at += length;
    return s;
  }
  std::vector<float> floats() {
    auto count = read<int32_t>();
    std::vector<float> values(count > 0 ? count : 0);
    for (float &x : values)
      x = read<float>();
    return values;
  }
  bool failed = false;

private:
  std::vector<uint8_t> bytes;
  size_t at = 0;
};

/// One key of a scheduler_config.json and its JSON value.
struct Entry {
  std::string key;
  uint8_t type; // 0 string, 1 number, 2 bool, 3 null
  std::string text;
  double number = 0;
};

struct Config {
  std::string label, className;
  std::vector<Entry> entries;
};

struct SamplingRun {
  Config config;
  std::string name;
  uint8_t pipeline;
  double eta, strength;
  int32_t steps, n, first;
  uint64_t seed;
  std::vector<float> timesteps;
  float initNoiseSigma;
  std::vector<float> samples; // [calls run + 1][n]
};

struct Alphas {
  Config config;
  std::vector<float> alphasCumprod;
};

struct RandnDraw {
  int64_t n;
  uint64_t digest;
  float head[8];
};

struct RandnCase {
  int kernel;
  uint64_t seed;
  std::vector<RandnDraw> draws;
};

struct Goldens {
  std::vector<SamplingRun> runs;
  std::vector<Alphas> alphas;
  std::vector<RandnCase> randn;
  std::string error;
};

std::vector<Entry> readEntries(Reader &r) {
  std::vector<Entry> entries(r.read<uint16_t>());
  for (Entry &e : entries) {
    e.key = r.string();
    e.type = r.read<uint8_t>();
    if (e.type == 0)
      e.text = r.string();
    else if (e.type == 1)
      e.number = r.read<double>();
    else if (e.type == 2)
      e.number = r.read<uint8_t>();
  }
  return entries;
}

const Goldens &goldens() {
  static Goldens g = [] {
    Goldens g;
    std::ifstream file(TFM_SCHEDULER_GOLDENS, std::ios::binary);
    if (!file) {
      g.error = std::string("cannot read ") + TFM_SCHEDULER_GOLDENS;
      return g;
    }
    Reader r(std::vector<uint8_t>(std::istreambuf_iterator<char>(file), {}));
    std::string magic;
    for (int k = 0; k < 8; ++k)
      magic += static_cast<char>(r.read<uint8_t>());
    if (magic != "TFMSCHED" || r.read<uint32_t>() != 1) {
      g.error = "not a version-1 schedulers.bin";
      return g;
    }
    for (uint8_t tag; !r.failed && (tag = r.read<uint8_t>()) != 0;) {
      if (tag == 1) {
        SamplingRun run;
        run.config.label = r.string();
        run.config.entries = readEntries(r);
        run.config.className = r.string();
        run.name = r.string();
        run.pipeline = r.read<uint8_t>();
        run.eta = r.read<double>();
        run.steps = r.read<int32_t>();
        run.seed = r.read<uint64_t>();
        run.n = r.read<int32_t>();
        run.strength = r.read<double>();
        run.timesteps = r.floats();
        run.initNoiseSigma = r.read<float>();
        run.first = r.read<int32_t>();
        run.samples = r.floats();
        g.runs.push_back(std::move(run));
      } else if (tag == 2) {
        Alphas a;
        a.config.label = r.string();
        a.config.entries = readEntries(r);
        a.config.className = r.string();
        a.alphasCumprod = r.floats();
        g.alphas.push_back(std::move(a));
      } else if (tag == 3) {
        int kernel = r.read<uint8_t>();
        uint32_t cases = r.read<uint32_t>();
        for (uint32_t c = 0; c < cases && !r.failed; ++c) {
          RandnCase rc;
          rc.kernel = kernel;
          rc.seed = r.read<uint64_t>();
          rc.draws.resize(r.read<uint32_t>());
          for (RandnDraw &d : rc.draws) {
            d.n = r.read<int64_t>();
            d.digest = r.read<uint64_t>();
            for (float &x : d.head)
              x = r.read<float>();
          }
          g.randn.push_back(std::move(rc));
        }
      } else {
        g.error = "unknown record " + std::to_string(tag);
        return g;
      }
    }
    if (r.failed)
      g.error = "truncated schedulers.bin";
    return g;
  }();
  return g;
}

/// The folder's scheduler config, as the frontend fills it from the JSON.
tfm_scheduler_config folderConfig(const Config &config) {
  tfm_scheduler_kind kind;
  tfm_status status;
  EXPECT_EQ(
      tfm_scheduler_kind_from_class(config.className.c_str(), &kind, &status),
      TFM_OK)
      << status.message;
  tfm_scheduler_config c = tfm_scheduler_config_defaults(kind);
  for (const Entry &e : config.entries) {
    const char *key = e.key.c_str();
    tfm_status_code code =
        e.type == 0
            ? tfm_scheduler_config_set_string(&c, key, e.text.c_str(), &status)
        : e.type == 1
            ? tfm_scheduler_config_set_number(&c, key, e.number, &status)
        : e.type == 2
            ? tfm_scheduler_config_set_bool(&c, key, e.number != 0, &status)
            : tfm_scheduler_config_set_null(&c, key, &status);
    EXPECT_EQ(code, TFM_OK) << e.key << ": " << status.message;
  }
  return c;
}

/// The goldens' model: 0.5 x + float32(sin(t / 100 + 0.37 k)).
void model(const float *input, float t, float *output, int32_t n) {
  for (int32_t k = 0; k < n; ++k)
    output[k] = 0.5f * input[k] +
                static_cast<float>(std::sin(double(t) / 100.0 + 0.37 * k));
}

/// max over k of |got - want| / max(1, |want|).
double maxError(const float *got, const float *want, int32_t n) {
  double worst = 0;
  for (int32_t k = 0; k < n; ++k) {
    double scale = std::max(1.0, std::fabs(double(want[k])));
    double error = std::fabs(double(got[k]) - double(want[k])) / scale;
    if (!(error <= worst)) // NaN counts as the worst
      worst = std::isnan(error) ? INFINITY : error;
  }
  return worst;
}

TEST(Schedulers, GoldensLoad) {
  ASSERT_EQ(goldens().error, "");
  EXPECT_GE(goldens().runs.size(), 150u);
  EXPECT_GE(goldens().alphas.size(), 4u);
  EXPECT_GE(goldens().randn.size(), 20u);
}

TEST(Schedulers, AlphasCumprodMatchTorchBitForBit) {
  ASSERT_EQ(goldens().error, "");
  for (const Alphas &a : goldens().alphas) {
    SCOPED_TRACE(a.config.label);
    tfm_scheduler_config c = folderConfig(a.config);
    tfm_scheduler *s = nullptr;
    tfm_status status;
    ASSERT_EQ(tfm_scheduler_new(&c, 10, &s, &status), TFM_OK) << status.message;
    int32_t length = 0;
    const float *got = tfm_scheduler_alphas_cumprod(s, &length);
    ASSERT_EQ(size_t(length), a.alphasCumprod.size());
    int differing = 0;
    for (int32_t t = 0; t < length; ++t)
      differing += std::memcmp(&got[t], &a.alphasCumprod[t], 4) != 0;
    EXPECT_EQ(differing, 0);
    tfm_scheduler_free(s);
  }
}

// Every run: the schedule, the initial latents, each step's latents.
TEST(Schedulers, SamplingMatchesDiffusers) {
  ASSERT_EQ(goldens().error, "");
  double worst = 0;
  int exact = 0;
  std::string worstRun;
  for (const SamplingRun &run : goldens().runs) {
    SCOPED_TRACE(run.config.label);
    tfm_status status;
    tfm_scheduler_config c = folderConfig(run.config);
    tfm_scheduler_config_pipeline_fixups(&c, tfm_sd_pipeline(run.pipeline));
    if (!run.name.empty()) {
      ASSERT_EQ(
          tfm_scheduler_config_for_name(&c, run.name.c_str(), &c, &status),
          TFM_OK)
          << status.message;
    }
    c.eta = run.eta;
    tfm_scheduler *s = nullptr;
    ASSERT_EQ(tfm_scheduler_new(&c, run.steps, &s, &status), TFM_OK)
        << status.message;

    int32_t count = tfm_scheduler_count(s);
    ASSERT_EQ(size_t(count), run.timesteps.size());
    for (int32_t i = 0; i < count; ++i)
      EXPECT_NEAR(tfm_scheduler_timestep(s, i), run.timesteps[i],
                  1e-6 * std::max(1.0f, std::fabs(run.timesteps[i])))
          << "timestep " << i;
    EXPECT_NEAR(tfm_scheduler_init_noise_sigma(s), run.initNoiseSigma,
                1e-6 * std::max(1.0f, run.initNoiseSigma));

    int32_t n = run.n;
    tfm_torch_generator generator;
    tfm_torch_generator_seed(&generator, run.seed, TFM_TORCH_NORMAL_AVX2);
    std::vector<float> latents(n), noise(n), input(n), output(n);
    tfm_torch_randn(&generator, noise.data(), n);
    int32_t first = 0;
    if (run.strength < 0) {
      float sigma = tfm_scheduler_init_noise_sigma(s);
      for (int32_t k = 0; k < n; ++k)
        latents[k] = noise[k] * sigma;
    } else {
      ASSERT_EQ(tfm_scheduler_img2img_start(s, run.strength, &first, &status),
                TFM_OK)
          << status.message;
      std::vector<float> image(n);
      for (int32_t k = 0; k < n; ++k)
        image[k] = static_cast<float>(0.8 * std::cos(0.3 * k + 0.5));
      ASSERT_EQ(tfm_scheduler_add_noise(s, first, image.data(), noise.data(),
                                        latents.data(), n, &status),
                TFM_OK)
          << status.message;
    }
    EXPECT_EQ(first, run.first);
    ASSERT_EQ(run.samples.size(), size_t(count - first + 1) * n);

    double runWorst = maxError(latents.data(), run.samples.data(), n);
    EXPECT_LE(runWorst, 1e-5) << "initial latents";
    for (int32_t i = first; i < count; ++i) {
      input = latents;
      tfm_scheduler_scale_model_input(s, i, input.data(), n);
      model(input.data(), tfm_scheduler_timestep(s, i), output.data(), n);
      const float *stepNoise = nullptr;
      if (tfm_scheduler_needs_noise(s)) {
        tfm_torch_randn(&generator, noise.data(), n);
        stepNoise = noise.data();
      }
      ASSERT_EQ(tfm_scheduler_step(s, i, output.data(), latents.data(), n,
                                   stepNoise, &status),
                TFM_OK)
          << status.message;
      const float *want = run.samples.data() + size_t(i - first + 1) * n;
      double error = maxError(latents.data(), want, n);
      EXPECT_LE(error, 1e-5) << "after step " << i
                             << " (t = " << tfm_scheduler_timestep(s, i) << ")";
      runWorst = std::max(runWorst, error);
    }
    exact += runWorst == 0;
    if (runWorst != 0 && std::getenv("TFM_SCHEDULER_VERBOSE")) {
      int timesteps = 0;
      for (int32_t i = 0; i < count; ++i)
        timesteps += tfm_scheduler_timestep(s, i) != run.timesteps[i];
      std::printf("  %s: %.3g, %d timesteps differ\n", run.config.label.c_str(),
                  runWorst, timesteps);
    }
    if (runWorst > worst) {
      worst = runWorst;
      worstRun = run.config.label;
    }
    tfm_scheduler_free(s);
  }
  std::printf("[ scheduler runs ] %d of %zu bit-exact; the largest error "
              "%.3g (%s)\n",
              exact, goldens().runs.size(), worst, worstRun.c_str());
}

// The history lives in the scheduler: a reset one samples the same again.
TEST(Schedulers, ResetSamplesTheSameAgain) {
  for (const char *name : {"pndm", "dpm++2m", "euler_a"}) {
    SCOPED_TRACE(name);
    tfm_status status;
    tfm_scheduler_config c = tfm_scheduler_config_defaults(TFM_SCHEDULER_DDIM),
                         chosen;
    ASSERT_EQ(tfm_scheduler_config_for_name(&c, name, &chosen, &status),
              TFM_OK);
    tfm_scheduler *s = nullptr;
    ASSERT_EQ(tfm_scheduler_new(&chosen, 6, &s, &status), TFM_OK)
        << status.message;
    std::vector<float> results[2];
    for (std::vector<float> &latents : results) {
      tfm_scheduler_reset(s);
      tfm_torch_generator g;
      tfm_torch_generator_seed(&g, 7, TFM_TORCH_NORMAL_AVX2);
      latents.assign(33, 0);
      std::vector<float> out(33), noise(33);
      tfm_torch_randn(&g, latents.data(), 33);
      for (int32_t i = 0; i < tfm_scheduler_count(s); ++i) {
        model(latents.data(), tfm_scheduler_timestep(s, i), out.data(), 33);
        tfm_torch_randn(&g, noise.data(), 33);
        ASSERT_EQ(tfm_scheduler_step(s, i, out.data(), latents.data(), 33,
                                     noise.data(), &status),
                  TFM_OK)
            << status.message;
      }
    }
    EXPECT_EQ(results[0], results[1]);
    tfm_scheduler_free(s);
  }
}

/// FNV-1a over the values' bytes, as the goldens' script digests them.
uint64_t digest(const std::vector<float> &values) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto *bytes = reinterpret_cast<const uint8_t *>(values.data());
  for (size_t i = 0; i < values.size() * 4; ++i)
    h = (h ^ bytes[i]) * 0x100000001b3ull;
  return h;
}

TEST(TorchRandn, MatchesTorchBitForBit) {
  ASSERT_EQ(goldens().error, "");
  int kernels[2] = {0, 0};
  for (const RandnCase &rc : goldens().randn) {
    SCOPED_TRACE("seed " + std::to_string(rc.seed) + ", kernel " +
                 std::to_string(rc.kernel));
    tfm_torch_generator g;
    tfm_torch_generator_seed(&g, rc.seed, tfm_torch_normal_kernel(rc.kernel));
    for (const RandnDraw &d : rc.draws) {
      std::vector<float> x(d.n);
      tfm_torch_randn(&g, x.data(), d.n);
      for (int64_t k = 0; k < std::min<int64_t>(8, d.n); ++k)
        EXPECT_EQ(x[k], d.head[k]) << "draw of " << d.n << ", value " << k;
      EXPECT_EQ(digest(x), d.digest) << "draw of " << d.n;
    }
    kernels[rc.kernel & 1]++;
  }
  EXPECT_GT(kernels[0], 0);
  EXPECT_GT(kernels[1], 0);
}

TEST(TorchRandn, OnlyTheLow32BitsOfTheSeedCount) {
  tfm_torch_generator a, b;
  tfm_torch_generator_seed(&a, 5, TFM_TORCH_NORMAL_AVX2);
  tfm_torch_generator_seed(&b, (uint64_t(1) << 32) + 5, TFM_TORCH_NORMAL_AVX2);
  std::vector<float> x(40), y(40);
  tfm_torch_randn(&a, x.data(), 40);
  tfm_torch_randn(&b, y.data(), 40);
  EXPECT_EQ(x, y);
}

//===------------------------------- refusals -----------------------------===//

std::string message(const tfm_status &status) { return status.message; }

TEST(SchedulerConfig, ClassesAndNames) {
  tfm_status status;
  tfm_scheduler_kind kind;
  ASSERT_EQ(tfm_scheduler_kind_from_class("EulerAncestralDiscreteScheduler",
                                          &kind, &status),
            TFM_OK);
  EXPECT_EQ(kind, TFM_SCHEDULER_EULER_ANCESTRAL);
  EXPECT_EQ(
      tfm_scheduler_kind_from_class("LMSDiscreteScheduler", &kind, &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "scheduler class \"LMSDiscreteScheduler\" is not supported; "
            "supported: DDIMScheduler, PNDMScheduler, EulerDiscreteScheduler, "
            "EulerAncestralDiscreteScheduler, DPMSolverMultistepScheduler");

  struct {
    const char *name;
    tfm_scheduler_kind kind;
    int karras, algorithm;
  } names[] = {
      {"ddim", TFM_SCHEDULER_DDIM, -1, -1},
      {"PLMS", TFM_SCHEDULER_PNDM, -1, -1},
      {"euler", TFM_SCHEDULER_EULER, 0, -1},
      {"Euler Karras", TFM_SCHEDULER_EULER, 1, -1},
      {"Euler a", TFM_SCHEDULER_EULER_ANCESTRAL, -1, -1},
      {"euler_ancestral", TFM_SCHEDULER_EULER_ANCESTRAL, -1, -1},
      {"dpm++2m", TFM_SCHEDULER_DPMPP_2M, 0, TFM_DPM_SOLVER_PP},
      {"DPM++ 2M Karras", TFM_SCHEDULER_DPMPP_2M, 1, TFM_DPM_SOLVER_PP},
      {"dpmpp_2m_sde", TFM_SCHEDULER_DPMPP_2M, 0, TFM_DPM_SDE_SOLVER_PP},
      {"DPM++ 2M SDE Karras", TFM_SCHEDULER_DPMPP_2M, 1, TFM_DPM_SDE_SOLVER_PP},
  };
  for (const auto &row : names) {
    SCOPED_TRACE(row.name);
    tfm_scheduler_choice choice;
    ASSERT_EQ(tfm_scheduler_kind_from_name(row.name, &choice, &status), TFM_OK);
    EXPECT_EQ(choice.kind, row.kind);
    EXPECT_EQ(choice.karras, row.karras);
    EXPECT_EQ(choice.algorithm, row.algorithm);
  }
  tfm_scheduler_choice choice;
  EXPECT_EQ(tfm_scheduler_kind_from_name("lms", &choice, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            std::string("unknown scheduler \"lms\"; the schedulers are ") +
                tfm_scheduler_names());
  EXPECT_EQ(tfm_scheduler_kind_from_name("euler_a_karras", &choice, &status),
            TFM_ERROR_INVALID_ARGUMENT);
}

TEST(SchedulerConfig, KeysAreCheckedByName) {
  tfm_status status;
  tfm_scheduler_config c = tfm_scheduler_config_defaults(TFM_SCHEDULER_PNDM);
  EXPECT_EQ(
      tfm_scheduler_config_set_string(&c, "beta_schedule", "cosine", &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "scheduler config: \"beta_schedule\" is \"cosine\"; expected one "
            "of \"linear\", \"scaled_linear\", \"squaredcos_cap_v2\"");
  EXPECT_EQ(tfm_scheduler_config_set_bool(&c, "beta_start", true, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "scheduler config: \"beta_start\" is true; expected a number");
  EXPECT_EQ(
      tfm_scheduler_config_set_number(&c, "num_train_timesteps", 10.5, &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "scheduler config: \"num_train_timesteps\" is "
                             "10.5; expected an integer >= 1");
  EXPECT_EQ(tfm_scheduler_config_set_null(&c, "steps_offset", &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "scheduler config: \"steps_offset\" is null; expected an integer");
  // Keys no class takes are ignored, as diffusers ignores them.
  EXPECT_EQ(c.present, 0u);
  EXPECT_EQ(
      tfm_scheduler_config_set_number(&c, "sample_max_value", 1.0, &status),
      TFM_OK);
  EXPECT_EQ(tfm_scheduler_config_set_string(&c, "_diffusers_version", "0.6.0",
                                            &status),
            TFM_OK);
  EXPECT_EQ(c.present, 0u);
}

// from_config keeps what the file had and nothing the old class defaulted.
TEST(SchedulerConfig, SwitchKeepsTheFilesKeysOnly) {
  tfm_status status;
  tfm_scheduler_config sd15 = tfm_scheduler_config_defaults(TFM_SCHEDULER_PNDM);
  ASSERT_EQ(tfm_scheduler_config_set_number(&sd15, "steps_offset", 1, &status),
            TFM_OK);
  ASSERT_EQ(tfm_scheduler_config_set_string(&sd15, "beta_schedule",
                                            "scaled_linear", &status),
            TFM_OK);
  ASSERT_EQ(tfm_scheduler_config_set_bool(&sd15, "clip_sample", false, &status),
            TFM_OK);
  tfm_scheduler_config euler;
  ASSERT_EQ(tfm_scheduler_config_for_name(&sd15, "euler_a", &euler, &status),
            TFM_OK);
  EXPECT_EQ(euler.kind, TFM_SCHEDULER_EULER_ANCESTRAL);
  EXPECT_EQ(euler.steps_offset, 1);
  EXPECT_EQ(euler.beta_schedule, TFM_BETAS_SCALED_LINEAR);
  // PNDM's "leading" was its default, not the file's: Euler's own.
  EXPECT_EQ(euler.timestep_spacing, TFM_SPACING_LINSPACE);
  tfm_scheduler_config ddim =
      tfm_scheduler_config_from_config(&sd15, TFM_SCHEDULER_DDIM);
  EXPECT_FALSE(ddim.clip_sample);     // the file's, kept though PNDM ignores it
  EXPECT_TRUE(ddim.set_alpha_to_one); // PNDM's default false is not kept
}

TEST(SchedulerConfig, FixupsFollowThePipeline) {
  tfm_scheduler_config c = tfm_scheduler_config_defaults(TFM_SCHEDULER_DDIM);
  tfm_scheduler_config_pipeline_fixups(&c, TFM_SD_PIPELINE_XL);
  EXPECT_EQ(c.steps_offset, 0);
  EXPECT_TRUE(c.clip_sample);
  tfm_scheduler_config_pipeline_fixups(&c, TFM_SD_PIPELINE_TEXT2IMG);
  EXPECT_EQ(c.steps_offset, 1);
  EXPECT_FALSE(c.clip_sample);
  EXPECT_EQ(c.present, 0u); // the values change, not what the file had
  tfm_scheduler_config p = tfm_scheduler_config_defaults(TFM_SCHEDULER_PNDM);
  tfm_scheduler_config_pipeline_fixups(&p, TFM_SD_PIPELINE_INPAINT);
  EXPECT_TRUE(p.skip_prk_steps);
}

TEST(Schedulers, RefusalsNameWhatTheyRefuse) {
  tfm_status status;
  tfm_scheduler *s = nullptr;
  tfm_scheduler_config c = tfm_scheduler_config_defaults(TFM_SCHEDULER_EULER);
  EXPECT_EQ(tfm_scheduler_new(&c, 0, &s, &status), TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "EulerDiscreteScheduler: the number of steps "
                             "must be positive; got 0");
  EXPECT_EQ(tfm_scheduler_new(&c, 1001, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "EulerDiscreteScheduler: 1001 steps are more than the 1000 "
            "training timesteps (num_train_timesteps)");

  tfm_scheduler_config ddim = tfm_scheduler_config_defaults(TFM_SCHEDULER_DDIM);
  ddim.steps_offset = 1;
  EXPECT_EQ(tfm_scheduler_new(&ddim, 1000, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "DDIMScheduler with 1000 steps: timestep 1000 is outside the 1000 "
            "training timesteps (timestep_spacing and steps_offset 1)");

  tfm_scheduler_config pndm = tfm_scheduler_config_defaults(TFM_SCHEDULER_PNDM);
  EXPECT_EQ(tfm_scheduler_new(&pndm, 3, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "PNDMScheduler with skip_prk_steps false needs "
                             "at least 4 steps; got 3");
  pndm.prediction_type = TFM_PREDICTION_SAMPLE;
  EXPECT_EQ(tfm_scheduler_new(&pndm, 10, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "PNDMScheduler does not support prediction_type \"sample\" "
            "(diffusers refuses it); use epsilon or v_prediction");

  tfm_scheduler_config dpm =
      tfm_scheduler_config_defaults(TFM_SCHEDULER_DPMPP_2M);
  dpm.solver_order = 3;
  EXPECT_EQ(tfm_scheduler_new(&dpm, 10, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "DPMSolverMultistepScheduler: solver_order 3 is not supported; 1 "
            "or 2 (DPM++ 2M) are");
  dpm.solver_order = 2;
  ASSERT_EQ(tfm_scheduler_config_set_string(&dpm, "algorithm_type", "dpmsolver",
                                            &status),
            TFM_OK);
  EXPECT_EQ(tfm_scheduler_new(&dpm, 10, &s, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status),
            "DPMSolverMultistepScheduler: algorithm_type \"dpmsolver\" is not "
            "supported; \"dpmsolver++\" and \"sde-dpmsolver++\" are");

  tfm_scheduler_config a =
      tfm_scheduler_config_defaults(TFM_SCHEDULER_EULER_ANCESTRAL);
  ASSERT_EQ(tfm_scheduler_new(&a, 10, &s, &status), TFM_OK);
  std::vector<float> x(16, 0.5f), out(16, 0.1f);
  EXPECT_EQ(
      tfm_scheduler_step(s, 0, out.data(), x.data(), 16, nullptr, &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "EulerAncestralDiscreteScheduler: step 0 needs "
                             "noise (16 values); got none");
  EXPECT_EQ(
      tfm_scheduler_step(s, 10, out.data(), x.data(), 16, out.data(), &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "EulerAncestralDiscreteScheduler: step 10 is "
                             "outside the 10 calls");
  ASSERT_EQ(
      tfm_scheduler_step(s, 2, out.data(), x.data(), 16, out.data(), &status),
      TFM_OK);
  EXPECT_EQ(
      tfm_scheduler_step(s, 4, out.data(), x.data(), 16, out.data(), &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "EulerAncestralDiscreteScheduler: step 4 after "
                             "step 2; steps go in order");
  EXPECT_EQ(
      tfm_scheduler_step(s, 3, out.data(), x.data(), 8, out.data(), &status),
      TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "EulerAncestralDiscreteScheduler: step 3 has 8 "
                             "values; the steps before had 16");

  int32_t first = -1;
  EXPECT_EQ(tfm_scheduler_img2img_start(s, 0.05, &first, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "strength 0.05 with 10 steps leaves no step to "
                             "run (int(steps * strength) is 0)");
  EXPECT_EQ(tfm_scheduler_img2img_start(s, 1.5, &first, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(message(status), "strength must be in [0, 1]; got 1.5");
  ASSERT_EQ(tfm_scheduler_img2img_start(s, 0.75, &first, &status), TFM_OK);
  EXPECT_EQ(first, 3); // int(10 * 0.75) = 7 steps run
  tfm_scheduler_free(s);
}

} // namespace
