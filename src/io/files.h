// Small file helpers shared by every writer and reader: atomic writes and JSON with
// error messages that name the file, line and column.
#pragma once
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace strata::io {

// Writes content to PATH via a temporary file in the same directory, fsync, rename.
void write_file_atomic(const std::string& path, std::string_view content);
// The same, writing the concatenation of parts: large payloads (tensor data) are written
// from where they live instead of being copied into one string first.
void write_file_atomic(const std::string& path, std::span<const std::string_view> parts);

// Appends text to PATH (created if missing), for logs that grow line by line. A failed write
// (a full disk) is a strata::Error naming the file and the bytes; the line may be left torn.
void append_to_file(const std::string& path, std::string_view text);

std::string read_file(const std::string& path);  // throws strata::Error naming the path

// Whether a path a file names (a shard in an index, a module in modules.json) stays inside the
// folder it is read from: relative and without "..". Outside files must not be read on its word.
bool stays_inside(const std::filesystem::path& rel);

// Parses a JSON file; errors read "<path>: invalid JSON at line L, column C: <reason>".
nlohmann::json read_json_file(const std::string& path);

}  // namespace strata::io
