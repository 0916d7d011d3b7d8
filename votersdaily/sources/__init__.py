"""Parsing helpers shared by the government-source spiders (safe XML, Eastern time, text clean-up)."""
