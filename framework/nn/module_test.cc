#include "framework/nn/module.h"

#include <cmath>
#include <map>

#include "framework/nn/layers.h"
#include "gtest/gtest.h"

namespace tvlab {
namespace {

class Block : public Module {
 public:
  explicit Block(bool reversed) {
    // Children added in different orders must still get the same values.
    if (reversed) {
      b = AddChild("b", std::make_unique<nn::Linear>(3, 2));
      a = AddChild("a", std::make_unique<nn::Linear>(4, 3));
    } else {
      a = AddChild("a", std::make_unique<nn::Linear>(4, 3));
      b = AddChild("b", std::make_unique<nn::Linear>(3, 2));
    }
  }
  nn::Linear* a;
  nn::Linear* b;
};

class Model : public Module {
 public:
  explicit Model(bool reversed) {
    auto* layers = AddChild("layers", std::make_unique<ModuleList>());
    layers->Append(std::make_unique<Block>(reversed));
    layers->Append(std::make_unique<Block>(reversed));
  }
};

TEST(Module, HierarchicalNamesAndCount) {
  Model m(false);
  std::vector<std::string> names;
  for (const auto& [name, var] : m.NamedParameters()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{
                       "layers.0.a.weight", "layers.0.a.bias", "layers.0.b.weight",
                       "layers.0.b.bias", "layers.1.a.weight", "layers.1.a.bias",
                       "layers.1.b.weight", "layers.1.b.bias"}));
  EXPECT_EQ(m.NumParameters(), 2 * (4 * 3 + 3 + 3 * 2 + 2));
}

TEST(Module, InitDependsOnNameNotConstructionOrder) {
  Model m1(false), m2(true), m3(false);
  InitializeParameters(m1, 5);
  InitializeParameters(m2, 5);
  InitializeParameters(m3, 6);
  auto p1 = m1.NamedParameters(), p2 = m2.NamedParameters(), p3 = m3.NamedParameters();
  std::map<std::string, std::vector<float>> by_name;
  for (auto& [n, v] : p2) by_name[n] = v.value().ToVector();
  for (auto& [n, v] : p1) EXPECT_EQ(v.value().ToVector(), by_name[n]) << n;
  EXPECT_NE(p1[0].second.value().ToVector(), p3[0].second.value().ToVector());
  // Linear init bound is 1/sqrt(in) = 0.5 for in = 4.
  for (float v : p1[0].second.value().ToVector()) EXPECT_LE(std::fabs(v), 0.5f);
}

}  // namespace
}  // namespace tvlab
