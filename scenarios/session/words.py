"""Seeded word lists for realistic session data: portal sources, study titles, descriptions and member e-mails.

Everything here is drawn from the task's own random generator, so a seed reproduces the same sessions. Names
and domains are invented (the domains are under `example.*`), so no address belongs to anyone.
"""

from __future__ import annotations

import random

SOURCES = ("msk_portal", "genie_portal", "tcga_portal", "public_portal", "pedcbio_portal", "cptac_portal")

# Session types whose data is a titled, shared selection (title, description, owner, members).
CONTENT_TYPES = ("virtual_study", "group", "comparison_session", "main_session", "custom_gene_list")
# How vague texts name a session type: words, not the identifier ("the virtual study sessions of `src1`").
TYPE_WORDS = {"virtual_study": "virtual study", "group": "group", "comparison_session": "comparison",
              "main_session": "main", "custom_gene_list": "custom gene list"}

CANCERS = (
    "Breast cancer", "Lung adenocarcinoma", "Colorectal cancer", "Glioblastoma", "Melanoma", "Prostate cancer",
    "Ovarian cancer", "Pancreatic cancer", "Bladder cancer", "Acute myeloid leukemia", "Renal cell carcinoma",
    "Endometrial cancer", "Gastric cancer", "Low-grade glioma", "Neuroblastoma", "Thyroid carcinoma",
)
GENES = (
    "TP53", "KRAS", "EGFR", "BRCA1", "BRCA2", "PIK3CA", "IDH1", "BRAF", "PTEN", "APC", "ALK", "NRAS", "ERBB2",
    "CDKN2A", "ARID1A", "FGFR3", "MYC", "KMT2D", "ATM", "NF1",
)
NOUNS = ("cohort", "subset", "selection", "panel", "comparison", "samples", "patients", "case series")
QUALIFIERS = ("mutant", "amplified", "wild-type", "altered", "fusion-positive", "high-expression")
PURPOSES = (
    "survival analysis", "a tumor board review", "the weekly lab meeting", "a grant resubmission",
    "drug-response follow-up", "a methods comparison", "the mutational signature project",
    "validation in an external cohort", "a clinical trial screen", "teaching",
)
ORIGINS = (
    "the TCGA PanCancer Atlas", "the MSK-IMPACT clinical sequencing cohort", "AACR Project GENIE",
    "the CPTAC proteogenomic studies", "the pediatric PCGP cohort", "an institutional biobank",
)
FIRST = (
    "ana", "ben", "chen", "dana", "elif", "farid", "grace", "hugo", "ines", "jonas", "kemal", "lena", "mara",
    "nikhil", "olga", "pedro", "quinn", "rosa", "sven", "tara", "umar", "vera", "wei", "yara", "zoe",
)
LAST = (
    "alvarez", "berg", "costa", "dubois", "eriksen", "fischer", "garcia", "haddad", "ito", "jansen", "kowalski",
    "lindqvist", "moreau", "novak", "okafor", "park", "quispe", "rossi", "silva", "tanaka", "ueda", "varga",
    "weber", "yilmaz", "zhang",
)
DOMAINS = ("example.org", "example.edu", "example.net", "lab.example.org", "hospital.example.com")
TITLE_SUFFIXES = (" (reviewed)", " (copy)", " v2", " - final", " (draft)", " (archived)", " - shared")


def person(rng: random.Random, taken: set[str]) -> str:
    """A new, unused e-mail address first.last@domain."""
    while True:
        email = f"{rng.choice(FIRST)}.{rng.choice(LAST)}@{rng.choice(DOMAINS)}"
        if email not in taken:
            taken.add(email)
            return email


def title(rng: random.Random, taken: set[str]) -> str:
    while True:
        shape = rng.randrange(3)
        if shape == 0:
            text = f"{rng.choice(CANCERS)} {rng.choice(GENES)} {rng.choice(NOUNS)}"
        elif shape == 1:
            text = f"{rng.choice(GENES)}-{rng.choice(QUALIFIERS)} {rng.choice(CANCERS).lower()} {rng.choice(NOUNS)}"
        else:
            a, b = rng.sample(GENES, 2)
            text = f"{a} vs {b} in {rng.choice(CANCERS).lower()}"
        if text not in taken:
            taken.add(text)
            return text


def description(rng: random.Random) -> str:
    return rng.choice((
        f"Samples from {rng.choice(ORIGINS)} selected for {rng.choice(PURPOSES)}.",
        f"Curated for {rng.choice(PURPOSES)}; {rng.choice(GENES)} status checked by hand.",
        f"Patients from {rng.choice(ORIGINS)} with {rng.choice(GENES)} alterations, for {rng.choice(PURPOSES)}.",
        f"Working set for {rng.choice(PURPOSES)}. Excludes samples without matched normals.",
    ))


def session_data(rng: random.Random, people: list[str], titles: set[str]) -> dict:
    """One session's data: a unique title, a description, an owner and 1-3 members (the owner may be one)."""
    members = rng.sample(people, rng.randint(1, min(3, len(people))))
    owner = rng.choice(members) if rng.random() < 0.6 else rng.choice(people)
    return {"title": title(rng, titles), "description": description(rng), "owner": owner, "members": members}
