//===- ImagesTest.cpp - tfm-serve's /v1/images/generations requests -------===//
//
// What parseImageRequest takes and refuses for a pipeline compiled for
// 96x64 images (12x8 latents, as test/tools/tfm-serve-images.test's
// fixture): defaults as the executable's, every extension read, and each
// refusal's status, field and message; the response's shape, and base64
// against RFC 4648's test vectors. The server's side (generation, PNGs,
// the API key) is tfm-serve-images.test's.
//
//===----------------------------------------------------------------------===//

#include "serve/Images.h"

#include <gtest/gtest.h>

#include <algorithm>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

class ImageRequestTest : public ::testing::Test {
protected:
  ImageRequestTest() {
    diffusion.latent_channels = diffusion.unet_in_channels = 4;
    diffusion.latent_height = 8;
    diffusion.latent_width = 12;
    diffusion.vae_scale_factor = 8;
    desc.name = "sd";
    desc.diffusion = &diffusion;
    served.name = "sd";
    served.desc = &desc;
  }

  /// Parses `body` (JSON text); the error, if any.
  std::optional<ApiError> parse(const json &body) {
    request = ImageRequest();
    return parseImageRequest(body.dump(), served, request);
  }

  /// The message of `body`'s refusal, which must be a 400 naming `field`.
  std::string refusal(const json &body, const std::string &field) {
    std::optional<ApiError> error = parse(body);
    if (!error)
      return "accepted";
    EXPECT_EQ(error->status, 400) << error->message;
    EXPECT_EQ(error->param, field) << error->message;
    return error->message;
  }

  tfm_diffusion_desc diffusion{};
  tfm_model_desc desc{};
  ServedModel served;
  ImageRequest request;
};

TEST_F(ImageRequestTest, DefaultsAreTheExecutables) {
  ASSERT_FALSE(parse({{"prompt", "a red square"}}));
  EXPECT_EQ(request.prompt, "a red square");
  EXPECT_FALSE(request.negativePrompt.has_value());
  EXPECT_EQ(request.n, 1);
  EXPECT_EQ(request.steps, 50);
  EXPECT_FLOAT_EQ(request.guidance, 7.5f);
  EXPECT_EQ(request.seed, 0u);
  EXPECT_EQ(request.scheduler, "");
  EXPECT_EQ(compiledImageSize(diffusion).width, 96);
  EXPECT_EQ(compiledImageSize(diffusion).height, 64);
}

TEST_F(ImageRequestTest, ReadsEveryField) {
  ASSERT_FALSE(parse({{"model", "sd"},
                      {"prompt", "a cat"},
                      {"negative_prompt", "blurry"},
                      {"n", 3},
                      {"size", "96x64"},
                      {"response_format", "b64_json"},
                      {"user", "someone"},
                      {"steps", 30.0},
                      {"guidance_scale", 4},
                      {"seed", 42},
                      {"scheduler", "euler_a"}}));
  EXPECT_EQ(request.negativePrompt, "blurry");
  EXPECT_EQ(request.n, 3);
  EXPECT_EQ(request.steps, 30);
  EXPECT_FLOAT_EQ(request.guidance, 4.0f);
  EXPECT_EQ(request.seed, 42u);
  EXPECT_EQ(request.scheduler, "euler_a");
  // The whole of torch's seed range.
  ASSERT_FALSE(parse({{"prompt", ""}, {"seed", UINT64_MAX}}));
  EXPECT_EQ(request.seed, UINT64_MAX);
  // The limits themselves.
  ASSERT_FALSE(parse(
      {{"prompt", "x"}, {"n", 4}, {"steps", 150}, {"guidance_scale", 30}}));
  ASSERT_FALSE(
      parse({{"prompt", "x"}, {"n", 1}, {"steps", 1}, {"guidance_scale", 0}}));
}

TEST_F(ImageRequestTest, NullIsTheDefault) {
  ASSERT_FALSE(parse({{"prompt", "x"},
                      {"negative_prompt", nullptr},
                      {"n", nullptr},
                      {"size", nullptr},
                      {"response_format", nullptr},
                      {"steps", nullptr},
                      {"guidance_scale", nullptr},
                      {"seed", nullptr},
                      {"scheduler", nullptr}}));
  EXPECT_EQ(request.n, 1);
  EXPECT_EQ(request.steps, 50);
}

TEST_F(ImageRequestTest, EverySchedulerNameAndAlias) {
  std::vector<std::string> names = imageSchedulerNames();
  for (const char *name :
       {"ddim", "pndm", "plms", "euler", "euler_karras", "euler_a",
        "euler_ancestral", "dpm++2m", "dpm++2m_karras", "dpm++2m_sde",
        "dpm++2m_sde_karras"})
    EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
  for (const std::string &name : names)
    EXPECT_FALSE(parse({{"prompt", "x"}, {"scheduler", name}})) << name;
}

TEST_F(ImageRequestTest, RefusesByName) {
  EXPECT_EQ(refusal({{"n", 1}}, "prompt"), "'prompt' is required");
  EXPECT_EQ(refusal({{"prompt", 3}}, "prompt"), "'prompt' must be a string");
  EXPECT_EQ(refusal({{"prompt", nullptr}}, "prompt"),
            "'prompt' must be a string");
  EXPECT_EQ(
      refusal({{"prompt", "x"}, {"negative_prompt", 1}}, "negative_prompt"),
      "'negative_prompt' must be a string");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"quality", "hd"}}, "quality"),
            "unknown field 'quality'");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"size", "512x512"}}, "size"),
            "'size' must be \"96x64\": this pipeline was compiled for 96x64 "
            "images (tfmc --image-size WIDTHxHEIGHT compiles another size), "
            "got \"512x512\"");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"size", "64x96"}}, "size").substr(0, 22),
            "'size' must be \"96x64\"");
  EXPECT_EQ(
      refusal({{"prompt", "x"}, {"response_format", "url"}}, "response_format"),
      "'response_format' must be \"b64_json\": tfm-serve keeps no files "
      "to give a URL of");
  EXPECT_EQ(
      refusal({{"prompt", "x"}, {"response_format", "png"}}, "response_format"),
      "'response_format' must be \"b64_json\", got \"png\"");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"n", 0}}, "n"),
            "'n' must be an integer from 1 to 4 (the images one request may "
            "ask for), got 0");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"n", 5}}, "n").substr(0, 36),
            "'n' must be an integer from 1 to 4 (");
  EXPECT_NE(refusal({{"prompt", "x"}, {"n", 1.5}}, "n"), "accepted");
  EXPECT_NE(refusal({{"prompt", "x"}, {"n", "2"}}, "n"), "accepted");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"steps", 0}}, "steps"),
            "'steps' must be an integer from 1 to 150, got 0");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"steps", 151}}, "steps"),
            "'steps' must be an integer from 1 to 150, got 151");
  EXPECT_EQ(
      refusal({{"prompt", "x"}, {"guidance_scale", 31}}, "guidance_scale"),
      "'guidance_scale' must be a number from 0 to 30, got 31");
  EXPECT_NE(
      refusal({{"prompt", "x"}, {"guidance_scale", -0.5}}, "guidance_scale"),
      "accepted");
  EXPECT_NE(
      refusal({{"prompt", "x"}, {"guidance_scale", "7"}}, "guidance_scale"),
      "accepted");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"seed", -1}}, "seed"),
            "'seed' must be a non-negative integer, got -1");
  EXPECT_NE(refusal({{"prompt", "x"}, {"seed", 1.5}}, "seed"), "accepted");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"scheduler", "k_lms"}}, "scheduler"),
            "'scheduler' must be one of " +
                std::string(tfm_image_scheduler_names()) + ", got \"k_lms\"");
  EXPECT_EQ(refusal({{"prompt", "x"}, {"user", 7}}, "user"),
            "'user' must be a string");
}

TEST_F(ImageRequestTest, AnotherModelIsNotFound) {
  std::optional<ApiError> error =
      parse({{"prompt", "x"}, {"model", "dall-e-3"}});
  ASSERT_TRUE(error);
  EXPECT_EQ(error->status, 404);
  EXPECT_EQ(error->message,
            "model 'dall-e-3' does not exist; this server serves 'sd'");
}

TEST_F(ImageRequestTest, NotAnObject) {
  request = ImageRequest();
  std::optional<ApiError> error = parseImageRequest("[1]", served, request);
  ASSERT_TRUE(error);
  EXPECT_EQ(error->message, "the body must be a JSON object");
}

TEST(ImageResponseTest, OneBase64PngPerImage) {
  json body = imageResponse({"\x89PNG", "ab"}, 1700000000);
  EXPECT_EQ(body.dump(), "{\"created\":1700000000,\"data\":[{\"b64_json\":"
                         "\"iVBORw==\"},{\"b64_json\":\"YWI=\"}]}");
}

TEST(Base64Test, Rfc4648Vectors) {
  EXPECT_EQ(base64(""), "");
  EXPECT_EQ(base64("f"), "Zg==");
  EXPECT_EQ(base64("fo"), "Zm8=");
  EXPECT_EQ(base64("foo"), "Zm9v");
  EXPECT_EQ(base64("foob"), "Zm9vYg==");
  EXPECT_EQ(base64("fooba"), "Zm9vYmE=");
  EXPECT_EQ(base64("foobar"), "Zm9vYmFy");
  EXPECT_EQ(base64(std::string("\xff\xfe\x00", 3)), "//4A");
}

} // namespace
