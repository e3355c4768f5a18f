// Decoders: turn the token strings of some ids back into text.
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace strata::tok {

class Decoder {
 public:
  virtual ~Decoder() = default;
  // HF's decode_chain: rewrites the list of token strings (a later step may join them).
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
  std::string decode(std::vector<std::string> tokens) const;
};

std::unique_ptr<Decoder> make_wordpiece_decoder(const std::string& prefix, bool cleanup);
std::unique_ptr<Decoder> make_byte_level_decoder();

// The "decoder" object of tokenizer.json (null gives nullptr).
std::unique_ptr<Decoder> decoder_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace strata::tok
