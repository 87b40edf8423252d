// cld2_detect: one language code per input line, from Debian's libcld2
// (the "full" table, 160+ languages), for bench/classify/langid_detectors.py.
// Reads UTF-8 text, one document per line, on stdin; writes CLD2's
// LanguageCode (ISO 639-1 where one exists, else 639-2/3 or CLD2's own,
// "un" for unknown) per line on stdout.
//
// Build: g++ -O2 -o cld2_detect cld2_detect.cc -lcld2_full   (apt-get install libcld2-dev)
#include <cstdio>  // the CLD2 header uses FILE without including it

#include <cld2/public/compact_lang_det.h>

#include <iostream>
#include <string>

int main() {
  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    bool reliable = false;
    CLD2::Language lang = CLD2::DetectLanguage(line.data(), static_cast<int>(line.size()),
                                               /*is_plain_text=*/true, &reliable);
    std::cout << CLD2::LanguageCode(lang) << '\n';
  }
  return 0;
}
