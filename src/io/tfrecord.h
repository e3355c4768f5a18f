// TFRecord framing, the container of TensorBoard event files: each record is
//   uint64 length | uint32 masked_crc32c(length) | data | uint32 masked_crc32c(data)
// little-endian, where masked_crc32c(x) = rotr15(crc32c(x)) + 0xa282ead8 (TensorFlow's
// lib/io/record_writer; the mask keeps a CRC of data that embeds CRCs well distributed).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), as TFRecord uses.
uint32_t crc32c(std::string_view bytes);
uint32_t masked_crc32c(std::string_view bytes);

// One record, framed.
std::string tfrecord_frame(std::string_view data);

// Every record of a TFRecord file, each checked against both of its CRCs; a truncated or
// damaged record is an error naming the file and the record's byte offset.
std::vector<std::string> read_tfrecords(const std::string& path);

}  // namespace strata::io
