#include "framework/schema/spec_text.h"

#include "google/protobuf/text_format.h"

namespace tvlab {

std::string SpecToText(const Experiment& spec) {
  std::string out;
  google::protobuf::TextFormat::Printer printer;
  printer.SetExpandAny(true);
  printer.PrintToString(spec, &out);
  return out;
}

}  // namespace tvlab
