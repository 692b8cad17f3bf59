#!/usr/bin/env python3
# Function lengths in a source tree, two ways: all lines from `fn` to its closing brace,
# and lines of code (as clippy's too_many_lines counts them: blank and comment-only
# lines left out). Test modules (`#[cfg(test)] mod`) are skipped.
#
#   bench/function-lengths.py src [N]    # the median, p90 and counts; the N longest
import re,sys,glob,statistics
rows=[]
for p in sorted(glob.glob(sys.argv[1]+'/**/*.rs', recursive=True)):
    lines=open(p).read().split('\n')
    i=0
    while i<len(lines):
        l=lines[i]
        if re.match(r'\s*#\[cfg\(test\)\]',l) and i+1<len(lines) and re.match(r'\s*mod ',lines[i+1]): break
        m=re.match(r'\s*(pub(\([a-z]+\))? )?(const )?(unsafe )?(extern "C" )?fn (\w+)',l)
        if m:
            depth=0; started=False; j=i; code=0
            while j<len(lines):
                raw=lines[j].strip()
                if raw and not raw.startswith('//'): code+=1
                s=re.sub(r'"(\\.|[^"\\])*"','""',lines[j]); s=re.sub(r"'(\\.|[^'\\])'","''",s); s=s.split('//')[0]
                for ch in s:
                    if ch=='{': depth+=1; started=True
                    elif ch=='}': depth-=1
                if started and depth==0: break
                if not started and s.rstrip().endswith(';'): break
                j+=1
            if started:
                rows.append((j-i+1,code,p.replace(sys.argv[1]+'/',''),m.group(6)))
            i=j+1 if started else i+1
            continue
        i+=1
for k,label in ((0,'all lines'),(1,'code lines')):
    n=sorted(r[k] for r in rows)
    print(f"{label}: {len(n)} functions; median {statistics.median(n)} p90 {n[int(len(n)*0.9)]} >100: {sum(1 for x in n if x>100)} >60: {sum(1 for x in n if x>60)} >40: {sum(1 for x in n if x>40)}")
if len(sys.argv)>2:
    for r in sorted(rows,key=lambda r:-r[1])[:int(sys.argv[2])]: print(r)
