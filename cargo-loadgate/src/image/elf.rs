//! Just enough ELF to tell whether a binary runs in an empty (`FROM scratch`) image: a binary with
//! a `PT_INTERP` program header needs a dynamic loader, one without it does not.

/// How an executable is linked, as far as an empty image cares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ElfLinkage {
    /// No `PT_INTERP`: runs without a loader (static, or static-pie).
    Static,
    /// Needs this dynamic loader.
    Dynamic {
        /// The interpreter path from `PT_INTERP`, e.g. `/lib64/ld-linux-x86-64.so.2`.
        interpreter: String,
    },
    /// Not an ELF file, or one too damaged to read.
    NotElf,
}

const PT_INTERP: u64 = 3;

/// Reads the program headers of an ELF image held in memory.
pub fn elf_linkage(bytes: &[u8]) -> ElfLinkage {
    read(bytes).unwrap_or(ElfLinkage::NotElf)
}

fn read(b: &[u8]) -> Option<ElfLinkage> {
    if b.get(..4)? != b"\x7fELF" {
        return None;
    }
    let is64 = match *b.get(4)? {
        1 => false,
        2 => true,
        _ => return None,
    };
    let le = match *b.get(5)? {
        1 => true,
        2 => false,
        _ => return None,
    };
    let u16_at = |o: usize| -> Option<u64> {
        let s: [u8; 2] = b.get(o..o + 2)?.try_into().ok()?;
        Some(u64::from(if le {
            u16::from_le_bytes(s)
        } else {
            u16::from_be_bytes(s)
        }))
    };
    let u32_at = |o: usize| -> Option<u64> {
        let s: [u8; 4] = b.get(o..o + 4)?.try_into().ok()?;
        Some(u64::from(if le {
            u32::from_le_bytes(s)
        } else {
            u32::from_be_bytes(s)
        }))
    };
    let u64_at = |o: usize| -> Option<u64> {
        let s: [u8; 8] = b.get(o..o + 8)?.try_into().ok()?;
        Some(if le {
            u64::from_le_bytes(s)
        } else {
            u64::from_be_bytes(s)
        })
    };
    // e_phoff, e_phentsize, e_phnum; in a program header p_type is first, p_offset and p_filesz follow.
    let (phoff, phentsize, phnum) = if is64 {
        (u64_at(0x20)?, u16_at(0x36)?, u16_at(0x38)?)
    } else {
        (u32_at(0x1C)?, u16_at(0x2A)?, u16_at(0x2C)?)
    };
    for i in 0..phnum {
        let ph = usize::try_from(phoff.checked_add(i.checked_mul(phentsize)?)?).ok()?;
        if u32_at(ph)? != PT_INTERP {
            continue;
        }
        let (offset, size) = if is64 {
            (u64_at(ph + 8)?, u64_at(ph + 32)?)
        } else {
            (u32_at(ph + 4)?, u32_at(ph + 16)?)
        };
        let start = usize::try_from(offset).ok()?;
        let raw = b.get(start..start.checked_add(usize::try_from(size).ok()?)?)?;
        let interpreter =
            String::from_utf8_lossy(raw.split(|&c| c == 0).next().unwrap_or_default()).into_owned();
        return Some(ElfLinkage::Dynamic { interpreter });
    }
    Some(ElfLinkage::Static)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A minimal 64-bit little-endian ELF header with the given program header types.
    fn elf64(types: &[u32], interp: &[u8]) -> Vec<u8> {
        let phoff = 64u64;
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[0x20..0x28].copy_from_slice(&phoff.to_le_bytes());
        b[0x36..0x38].copy_from_slice(&56u16.to_le_bytes());
        b[0x38..0x3A].copy_from_slice(&(types.len() as u16).to_le_bytes());
        let data_at = 64 + 56 * types.len() as u64;
        for &t in types {
            let mut ph = vec![0u8; 56];
            ph[..4].copy_from_slice(&t.to_le_bytes());
            ph[8..16].copy_from_slice(&data_at.to_le_bytes());
            ph[32..40].copy_from_slice(&(interp.len() as u64).to_le_bytes());
            b.extend(ph);
        }
        b.extend_from_slice(interp);
        b
    }

    #[test]
    fn crafted_static_binary() {
        // PT_LOAD, PT_DYNAMIC (static-pie has one), PT_GNU_STACK: no interpreter.
        assert_eq!(
            elf_linkage(&elf64(&[1, 2, 0x6474_e551], b"")),
            ElfLinkage::Static
        );
    }

    #[test]
    fn crafted_dynamic_binary() {
        assert_eq!(
            elf_linkage(&elf64(&[6, 3, 1], b"/lib/ld.so\0")),
            ElfLinkage::Dynamic {
                interpreter: "/lib/ld.so".into()
            }
        );
    }

    #[test]
    fn system_binary_is_dynamic() {
        let bytes = std::fs::read("/bin/true").expect("/bin/true exists on this host");
        assert!(
            matches!(elf_linkage(&bytes), ElfLinkage::Dynamic { interpreter } if interpreter.contains("ld-"))
        );
    }

    #[test]
    fn garbage_is_not_elf() {
        assert_eq!(elf_linkage(b"#!/bin/sh\n"), ElfLinkage::NotElf);
        assert_eq!(elf_linkage(b""), ElfLinkage::NotElf);
        let mut truncated = elf64(&[3], b"/lib/ld.so\0");
        truncated.truncate(80);
        assert_eq!(elf_linkage(&truncated), ElfLinkage::NotElf);
        let mut huge_phnum = elf64(&[], b"");
        huge_phnum[0x38..0x3A].copy_from_slice(&u16::MAX.to_le_bytes());
        assert_eq!(elf_linkage(&huge_phnum), ElfLinkage::NotElf);
    }
}
