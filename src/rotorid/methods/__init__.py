"""Identification methods: delay (Eschmann et al.), tls (Six et al.), online (Kwon et al.)."""
