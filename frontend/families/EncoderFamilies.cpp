//===- EncoderFamilies.cpp - Hugging Face encoder model_types -----------===//
//
// The readers of encoder configs and checkpoint names (see
// EncoderFamilies.h); EncoderBuilder.cpp makes the module.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/EncoderFamilies.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/ErrorMessages.h"
#include "ir/TfmOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

EncoderSpec readBertSpec(ConfigReader &config) {
  EncoderSpec spec;
  spec.family = "bert";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.intermediateSize = config.integer("intermediate_size");
  spec.maxPositions = config.integer("max_position_embeddings");
  spec.typeVocabSize = config.integer("type_vocab_size", 2);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-12);
  spec.activation = config.activation("hidden_act", "gelu");
  std::string positions =
      config.string("position_embedding_type", "absolute");
  if (positions != "absolute")
    config.fail("unsupported config value position_embedding_type = '" +
                positions + "' (supported: absolute)");
  if (config.boolean("is_decoder", false))
    config.fail("unsupported config value 'is_decoder' = true (a BERT "
                "decoder)");
  return spec;
}

/// DistilBERT: BERT's blocks under other names, no token types, epsilon
/// 1e-12 fixed by the reference.
EncoderSpec readDistilBertSpec(ConfigReader &config) {
  EncoderSpec spec;
  spec.family = "distilbert";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("dim");
  spec.numLayers = config.integer("n_layers");
  spec.numHeads = config.integer("n_heads");
  spec.intermediateSize = config.integer("hidden_dim");
  spec.maxPositions = config.integer("max_position_embeddings");
  spec.normEpsilon = 1e-12;
  spec.activation = config.activation("activation", "gelu");
  return spec;
}

/// DistilBERT's checkpoint names, after `prefix` ("distilbert.").
void useDistilBertNames(EncoderSpec &spec, const std::string &prefix) {
  std::string e = prefix + "embeddings.";
  spec.wordEmbeddings = e + "word_embeddings.weight";
  spec.positionEmbeddings = e + "position_embeddings.weight";
  spec.embeddingNorm = e + "LayerNorm.weight";
  std::string l = prefix + "transformer.layer.{}.";
  spec.query = l + "attention.q_lin.weight";
  spec.key = l + "attention.k_lin.weight";
  spec.value = l + "attention.v_lin.weight";
  spec.attentionOutput = l + "attention.out_lin.weight";
  spec.attentionNorm = l + "sa_layer_norm.weight";
  spec.intermediate = l + "ffn.lin1.weight";
  spec.output = l + "ffn.lin2.weight";
  spec.outputNorm = l + "output_layer_norm.weight";
}

/// BERT's checkpoint names, after `prefix` ("bert." in task models).
void useBertNames(EncoderSpec &spec, const std::string &prefix) {
  std::string e = prefix + "embeddings.";
  spec.wordEmbeddings = e + "word_embeddings.weight";
  spec.positionEmbeddings = e + "position_embeddings.weight";
  spec.typeEmbeddings = e + "token_type_embeddings.weight";
  spec.embeddingNorm = e + "LayerNorm.weight";
  std::string l = prefix + "encoder.layer.{}.";
  spec.query = l + "attention.self.query.weight";
  spec.key = l + "attention.self.key.weight";
  spec.value = l + "attention.self.value.weight";
  spec.attentionOutput = l + "attention.output.dense.weight";
  spec.attentionNorm = l + "attention.output.LayerNorm.weight";
  spec.intermediate = l + "intermediate.dense.weight";
  spec.output = l + "output.dense.weight";
  spec.outputNorm = l + "output.LayerNorm.weight";
}

/// ELECTRA: BERT's layers over embeddings of their own width, projected.
EncoderSpec readElectraSpec(ConfigReader &config) {
  EncoderSpec spec = readBertSpec(config);
  spec.family = "electra";
  spec.embeddingSize = config.integer("embedding_size", spec.hiddenSize);
  return spec;
}

/// RoBERTa and XLM-RoBERTa: BERT's layers; positions number only real
/// tokens, after the padding id, and there is one token type.
EncoderSpec readRobertaLikeSpec(ConfigReader &config, llvm::StringRef family) {
  EncoderSpec spec = readBertSpec(config);
  spec.family = family.str();
  spec.typeVocabSize = config.integer("type_vocab_size", 1);
  spec.positionPaddingId = config.integer("pad_token_id", 1);
  if (spec.positionPaddingId < 0)
    config.fail("pad_token_id must be non-negative, got " +
                llvm::Twine(spec.positionPaddingId));
  return spec;
}
EncoderSpec readRobertaSpec(ConfigReader &config) {
  return readRobertaLikeSpec(config, "roberta");
}
EncoderSpec readXlmRobertaSpec(ConfigReader &config) {
  return readRobertaLikeSpec(config, "xlm-roberta");
}

/// Longformer: RoBERTa's embeddings and layers, with sparse attention. A
/// layer's attention_window (one for all, or a list) is even and covers
/// both sides of a token; the spec keeps the one-sided half.
EncoderSpec readLongformerSpec(ConfigReader &config) {
  EncoderSpec spec = readRobertaLikeSpec(config, "longformer");
  EncoderSpec::SparseAttention sparse;
  const llvm::json::Value *window = config.fields().get("attention_window");
  std::optional<int64_t> shared = window ? window->getAsInteger() : 512;
  if (shared)
    sparse.windows.assign(std::max<int64_t>(spec.numLayers, 0), *shared);
  else
    sparse.windows = config.positiveIntegers(
        "attention_window", std::max<int64_t>(spec.numLayers, 0),
        "one per layer: num_hidden_layers");
  for (int64_t &w : sparse.windows) {
    if (w <= 0 || w % 2 != 0) {
      config.fail("attention_window must be even and positive (a window "
                  "of w sees w/2 tokens on each side), got " +
                  llvm::Twine(w));
      break;
    }
    w /= 2;
  }
  spec.sparse = sparse;
  return spec;
}

/// Whose tensor names and task heads a family's checkpoints use.
enum class EncoderLayout {
  Bert,       // BERT's names, its pooler and cls.predictions head
  Roberta,    // BERT's names, RoBERTa's classifier and lm_head
  Electra,    // BERT's names, ELECTRA's classifier and generator head
  DistilBert, // DistilBERT's names, pre_classifier and vocab_* head; no
              // token types
};

/// An encoder family: config.json's model_type, the reader of its spec,
/// the scope its task models keep the encoder under ("bert.", and
/// "roberta." for XLM-R's classes too) and its checkpoints' layout.
struct EncoderFamily {
  llvm::StringLiteral modelType;
  EncoderSpec (*read)(ConfigReader &config);
  llvm::StringLiteral scope;
  EncoderLayout layout;
};

/// Every encoder family, in the order messages list them. A new family is
/// a reader above and a row here.
const EncoderFamily kEncoderFamilies[] = {
    {"bert", readBertSpec, "bert", EncoderLayout::Bert},
    {"distilbert", readDistilBertSpec, "distilbert", EncoderLayout::DistilBert},
    {"electra", readElectraSpec, "electra", EncoderLayout::Electra},
    // Longformer's heads are RoBERTa's.
    {"longformer", readLongformerSpec, "longformer", EncoderLayout::Roberta},
    {"roberta", readRobertaSpec, "roberta", EncoderLayout::Roberta},
    {"xlm-roberta", readXlmRobertaSpec, "roberta", EncoderLayout::Roberta},
};

/// The row of a spec's family (every spec comes from one).
const EncoderFamily &familyOf(const EncoderSpec &spec) {
  return *findFamily(kEncoderFamilies, &EncoderFamily::modelType,
                     llvm::StringRef(spec.family));
}

} // namespace

std::string mlir::tfm::supportedEncoderFamilies() {
  return familyNames(kEncoderFamilies, &EncoderFamily::modelType);
}

bool mlir::tfm::readEncoderFamily(llvm::StringRef modelType,
                                  ConfigReader &config, EncoderSpec &spec) {
  const EncoderFamily *family =
      findFamily(kEncoderFamilies, &EncoderFamily::modelType, modelType);
  if (!family)
    return false;
  spec = family->read(config);
  return true;
}

llvm::Error mlir::tfm::validateEncoderSpec(const EncoderSpec &spec,
                                           llvm::StringRef configPath) {
  if (llvm::Error err = expectPositiveSizes(
          configPath, {{"vocab size", spec.vocabSize},
                       {"hidden size", spec.hiddenSize},
                       {"layer count", spec.numLayers},
                       {"attention head count", spec.numHeads},
                       {"intermediate size", spec.intermediateSize},
                       {"maximum positions", spec.maxTokens()},
                       {"embedding size", spec.embeddingWidth()}}))
    return err;
  if (familyOf(spec).layout != EncoderLayout::DistilBert &&
      spec.typeVocabSize <= 0)
    return makeError(configPath + ": token type count must be positive, got " +
                     llvm::Twine(spec.typeVocabSize));
  if (spec.hiddenSize % spec.numHeads != 0)
    return makeError(configPath + ": hidden size (" +
                     llvm::Twine(spec.hiddenSize) +
                     ") is not divisible by the head count (" +
                     llvm::Twine(spec.numHeads) + ")");
  if (!(spec.normEpsilon >= 0) || !std::isfinite(spec.normEpsilon))
    return makeError(configPath + ": norm epsilon must be finite and "
                                  "non-negative");
  return llvm::Error::success();
}

EncoderHead
mlir::tfm::encoderHeadOf(llvm::ArrayRef<std::string> architectures) {
  for (llvm::StringRef architecture : architectures) {
    if (architecture.ends_with("ForMaskedLM") ||
        architecture.ends_with("ForPreTraining"))
      return EncoderHead::MaskedLm;
    if (architecture.ends_with("ForSequenceClassification"))
      return EncoderHead::SequenceClassification;
    if (architecture.ends_with("ForTokenClassification"))
      return EncoderHead::TokenClassification;
  }
  return EncoderHead::None;
}

bool mlir::tfm::resolveEncoderNames(EncoderSpec &spec,
                                    const WeightStore &weights,
                                    EncoderHead head, int64_t labels) {
  // Task models (BertForMaskedLM, ...) keep the encoder under their
  // family's scope.
  const EncoderFamily &family = familyOf(spec);
  std::string scope = family.scope.str();
  std::string prefix =
      weights.contains(scope + ".embeddings.word_embeddings.weight")
          ? scope + "."
          : "";
  if (family.layout == EncoderLayout::DistilBert)
    useDistilBertNames(spec, prefix);
  else
    useBertNames(spec, prefix);
  if (spec.embeddingWidth() != spec.hiddenSize)
    spec.embeddingProjection = prefix + "embeddings_project.weight";
  if (spec.sparse) {
    std::string l = prefix + "encoder.layer.{}.attention.self.";
    spec.sparse->globalQuery = l + "query_global.weight";
    spec.sparse->globalKey = l + "key_global.weight";
    spec.sparse->globalValue = l + "value_global.weight";
  }
  bool bert = family.layout == EncoderLayout::Bert,
       roberta = family.layout == EncoderLayout::Roberta,
       electra = family.layout == EncoderLayout::Electra;
  switch (head) {
  case EncoderHead::None:
    if (weights.contains(prefix + "pooler.dense.weight"))
      spec.pooler = prefix + "pooler.dense.weight";
    return true;
  case EncoderHead::TokenClassification:
    spec.classifier = {true, "", "classifier.weight", labels};
    return true;
  case EncoderHead::SequenceClassification:
    // The first token's state through a dense layer, then the classifier:
    // BERT's pooler, RoBERTa's and ELECTRA's head (tanh, GELU), DistilBERT's
    // pre-classifier (ReLU).
    if (bert)
      spec.classifier = {false, prefix + "pooler.dense.weight",
                         "classifier.weight", labels, ActivationKind::tanh};
    else if (roberta || electra)
      spec.classifier = {false, "classifier.dense.weight",
                         "classifier.out_proj.weight", labels,
                         electra ? ActivationKind::gelu : ActivationKind::tanh};
    else
      spec.classifier = {false, "pre_classifier.weight", "classifier.weight",
                         labels, ActivationKind::relu};
    // LongformerForSequenceClassification gives the first token global
    // attention when the caller sets none; its @classify always does.
    if (spec.sparse)
      spec.sparse->globalPrefix = 1;
    return true;
  case EncoderHead::MaskedLm:
    break;
  }
  // The decoder is tied to the word embeddings unless the checkpoint has
  // its own; the bias is saved as the head's or the decoder's.
  auto firstOf = [&](std::initializer_list<std::string> names) {
    for (const std::string &name : names)
      if (weights.contains(name))
        return name;
    return std::string(*names.begin());
  };
  auto ownDecoder = [&](const std::string &name) {
    return weights.contains(name) ? name : std::string();
  };
  EncoderSpec::MaskedLmHead maskedLm;
  if (bert) {
    std::string p = "cls.predictions.";
    maskedLm = {p + "transform.dense.weight", p + "transform.LayerNorm.weight",
                ownDecoder(p + "decoder.weight"),
                firstOf({p + "bias", p + "decoder.bias"}), spec.activation};
  } else if (roberta) {
    // RoBERTa's head uses the exact GELU whatever hidden_act says.
    std::string p = "lm_head.";
    maskedLm = {p + "dense.weight", p + "layer_norm.weight",
                ownDecoder(p + "decoder.weight"),
                firstOf({p + "bias", p + "decoder.bias"}),
                ActivationKind::gelu};
  } else if (electra) {
    // The generator's head narrows to the embedding size (exact GELU), and
    // its decoder reads the word embeddings. ElectraForPreTraining is the
    // discriminator, which has no such head.
    if (!weights.contains("generator_predictions.dense.weight"))
      return false;
    maskedLm = {"generator_predictions.dense.weight",
                "generator_predictions.LayerNorm.weight",
                ownDecoder("generator_lm_head.weight"),
                "generator_lm_head.bias", ActivationKind::gelu,
                spec.embeddingWidth()};
  } else {
    maskedLm = {"vocab_transform.weight", "vocab_layer_norm.weight",
                ownDecoder("vocab_projector.weight"), "vocab_projector.bias",
                spec.activation};
  }
  spec.maskedLm = maskedLm;
  return true;
}
