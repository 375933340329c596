// SPDX-License-Identifier: BSD-3-Clause
#include <kpmap/io/checkpoint.hpp>

#include <kpmap/base/files.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace kpmap::checkpoint {

namespace fs = std::filesystem;

void keep_last(const std::string& dir, const std::string& stem, int keep, long long newest) {
  // <stem>_<digits>.h5, with the step as the number.
  const std::string prefix = stem + "_";
  std::vector<std::pair<long long, fs::path>> found;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir.empty() ? "." : dir, ec)) {
    const std::string file = entry.path().filename().string();
    if (file.size() <= prefix.size() + 3 || file.compare(0, prefix.size(), prefix) != 0 ||
        file.compare(file.size() - 3, 3, ".h5") != 0) {
      continue;
    }
    const std::string digits = file.substr(prefix.size(), file.size() - prefix.size() - 3);
    if (digits.empty() || digits.size() > 18 ||
        digits.find_first_not_of("0123456789") != std::string::npos) {
      continue;
    }
    const long long step = std::stoll(digits);
    if (newest < 0 || step <= newest) found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  const std::size_t keep_n = static_cast<std::size_t>(std::max(keep, 0));
  for (std::size_t i = 0; i + keep_n < found.size(); ++i) {
    fs::remove(found[i].second, ec);
    auto xmf = found[i].second;
    xmf.replace_extension(".xmf");
    fs::remove(xmf, ec);
  }
}

void keep_last(std::vector<std::string>& files, int keep) {
  const std::size_t keep_n = static_cast<std::size_t>(std::max(keep, 0));
  if (files.size() <= keep_n) return;
  const std::size_t gone = files.size() - keep_n;
  std::error_code ec;
  for (std::size_t i = 0; i < gone; ++i) {
    fs::remove(files[i], ec);
    fs::remove(fs::path(files[i]).replace_extension(".xmf"), ec);
  }
  files.erase(files.begin(), files.begin() + static_cast<std::ptrdiff_t>(gone));
}

void write_xdmf(const std::string& xmf_path, const std::string& h5_file,
                const std::vector<std::size_t>& cells, const std::vector<double>& origin,
                const std::vector<double>& spacing, const std::vector<XdmfField>& fields,
                double time) {
  const std::size_t nd = cells.size();
  if ((nd != 2 && nd != 3) || origin.size() != nd || spacing.size() != nd) {
    throw Error("kpmap::checkpoint::write_xdmf: give 2 or 3 cell extents, origins and spacings");
  }
  auto join = [](const auto& v, auto f) {
    std::ostringstream s;
    s.precision(17);
    for (std::size_t i = 0; i < v.size(); ++i) s << (i ? " " : "") << f(v[i]);
    return s.str();
  };
  std::vector<std::size_t> nodes;
  for (auto c : cells) nodes.push_back(c + 1);
  const std::string dim = std::to_string(nd);
  std::ostringstream x;
  x << "<?xml version=\"1.0\" ?>\n"
    << "<Xdmf Version=\"3.0\">\n  <Domain>\n    <Grid Name=\"mesh\" GridType=\"Uniform\">\n"
    << "      <Time Value=\"" << time << "\"/>\n"
    << "      <Topology TopologyType=\"" << dim << "DCoRectMesh\" Dimensions=\""
    << join(nodes, [](auto v) { return v; }) << "\"/>\n"
    << "      <Geometry GeometryType=\"ORIGIN_" << (nd == 2 ? "DXDY" : "DXDYDZ") << "\">\n"
    << "        <DataItem Dimensions=\"" << dim << "\" Format=\"XML\">"
    << join(origin, [](auto v) { return v; }) << "</DataItem>\n"
    << "        <DataItem Dimensions=\"" << dim << "\" Format=\"XML\">"
    << join(spacing, [](auto v) { return v; }) << "</DataItem>\n"
    << "      </Geometry>\n";
  for (const auto& f : fields) {
    x << "      <Attribute Name=\"" << f.name << "\" AttributeType=\"Scalar\" Center=\"Cell\">\n"
      << "        <DataItem Dimensions=\"" << join(cells, [](auto v) { return v; })
      << "\" NumberType=\"Float\" Precision=\"8\" Format=\"HDF\">" << h5_file << ":/" << f.dataset
      << "</DataItem>\n      </Attribute>\n";
  }
  x << "    </Grid>\n  </Domain>\n</Xdmf>\n";
  files::write_atomic(xmf_path, x.str());
}

std::string last_good_note(const std::string& file) {
  if (file.empty()) return "; no checkpoint was written";
  return "; the last good checkpoint is " + file + " (continue with --restart " + file + ")";
}

}  // namespace kpmap::checkpoint
