#!/usr/bin/python3
"""Table tests of prep.py's e-mail signature gold rules (on_sign_off_line,
looks_signed) on hand-written bodies. The rules decide which records are
"absent" and which name is the answer; each case below is a kind of body
that a rule once got wrong (see the notes in prep.py's docstrings).

Run: python3 bench/extract/prep_test.py (TestExtractGoldRules runs it in CI).
"""
import importlib.util
import os
import unittest

_spec = importlib.util.spec_from_file_location("prep", os.path.join(os.path.dirname(os.path.abspath(__file__)), "prep.py"))
prep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(prep)

FOOTER = "\n_______________________________________________\nSome-list mailing list\nhttp://lists.example.org/listinfo/some-list\n"


class SignOffLine(unittest.TestCase):
    cases = [
        # (body, the name looked for, its occurrence (last), signs the mail)
        ("I'll look at it tonight.\n\nRegards,\nEric Smith\n", "Eric Smith", True),
        ("See the patch.\n\nThanks, Whit\n", "Whit", True),
        ("Gary Lawrence Murphy <garym@example.com> TeleDynamics\n", "Gary Lawrence Murphy", True),
        ("Gregory Alan Bolcer, CTO | work: 949 555 0100\n", "Gregory Alan Bolcer", True),
        ("Dr. Marc Baaden\n", "Marc Baaden", True),
        ("-- \nMatthias Saou   World Trade Center\n", "Matthias Saou", True),
        # quoted from the mail replied to
        ("> Thanks,\n> Whit\n\nDone.\n", "Whit", False),
        ("| Chad\n", "Chad", False),
        # prose, not a sign-off
        ("Chad can answer that better than me.\n", "Chad", False),
        ("On Monday, Steve Kann wrote:\n> hello\n", "Steve Kann", False),
        ("I think Ximian only ships libpng.\n", "Ximian", False),
        # a spam page's markup
        ('<p><font size="2">Online</font></p>\n', "Online", False),
    ]

    def test_cases(self):
        for body, name, want in self.cases:
            with self.subTest(body=body):
                at = body.rfind(name)
                self.assertGreaterEqual(at, 0)
                self.assertEqual(prep.on_sign_off_line(body, at, name), want)


class LooksSigned(unittest.TestCase):
    cases = [
        # signed, by whatever name: no "absent" gold can come from these
        ("Try the other mirror first.\n\nCheers,\nDan\n", True),
        ("Try the other mirror first.\n\n- Joe\n" + FOOTER, True),
        ("whitelist_from *@example.com\n\nThanks!!\nJim \n\n" + FOOTER + FOOTER + FOOTER, True),
        ("It changes the time, then leaves it alone.\n\nL.\n\n-- \nIrish Linux Users' Group\nhttp://www.linux.ie/\n", True),
        ("Ad Aware sometimes helps too.\n-R\n\nOn Saturday, Brian wrote:\n> thanks\n" + FOOTER, True),
        ("Have a look at this.\n\nGreg\n\n" + "---- forwarded article ----\n" + "Paragraph of the article.\n" * 20, True),
        # unsigned
        ("tick.indigo.ie\ntock.indigo.ie\n\n-- \nIrish Linux Users' Group\nhttp://www.linux.ie/\n", False),
        ("So if your fonts look ugly, lack of bytecode hinting is *not* the cause.\n" + FOOTER, False),
        ("Thanks !!!\n" + FOOTER, True),  # a closing alone: signed, by nobody the header names
        ("The lists are downloadable along with free sending software.\nCALL 1-602-230-4252\n", False),
        ("> Thanks,\n> -Dave\n>\n> > quoted again\n", False),
    ]

    def test_cases(self):
        for body, want in self.cases:
            with self.subTest(body=body[-60:]):
                self.assertEqual(prep.looks_signed(body), want)


if __name__ == "__main__":
    unittest.main()
